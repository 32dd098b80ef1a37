// SPANK plugin: adds --gpushare=production|opportunistic[,mem=SIZE][,compute=PCT]
// to sbatch, salloc and srun, and runs every task of such a job under the
// gpushare interposer with that class and limits (gpushare-slurm(7)).
//
// Where each part runs:
//   - the option callback, in sbatch/salloc/srun (and again in slurmstepd):
//     a value outside the grammar fails the submission there, with a
//     message naming the bad part;
//   - slurm_spank_init_post_opt, in the allocator and local contexts: the
//     request goes into the job's control environment, where the Prolog
//     and Epilog see it as SPANK_GPUSHARE;
//   - slurm_spank_task_init, in slurmstepd as the user, just before each
//     task execs: sets GPUSHARE_QOS, GPUSHARE_MEM_LIMIT, GPUSHARE_COMPUTE,
//     GPUSHARE_JOB=slurm-<jobid>, GPUSHARE_SOCKET, GPUSHARE_LAUNCHED_FOR and
//     GPUSHARE_SLURM=spank,
//     and puts the interposer first in LD_PRELOAD.
// Plugin arguments (plugstack.conf): interposer=PATH, socket=PATH.
// Built only against Slurm's own <slurm/spank.h>: there is no ABI promise
// across Slurm releases, so rebuild it for each major release.
#include <slurm/spank.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

SPANK_PLUGIN(gpushare, 1);

#ifndef GPUSHARE_DEFAULT_INTERPOSER
#define GPUSHARE_DEFAULT_INTERPOSER "/usr/local/lib/gpushare/libgpushare-interpose.so"
#endif

static char request[256];  // the option's value, once checked
static char klass[16];
static char mem[64];
static char compute[8];
static int requested;

// Sizes as the interposer reads them: a number, an optional fraction and
// an optional unit (B, KiB..TiB, K..T, KB..TB) or a percentage.
static int valid_size(const char* text) {
  static const char* const units[] = {"",  "B", "KiB", "MiB", "GiB", "TiB", "K", "M",
                                      "G", "T", "KB",  "MB",  "GB",  "TB",  "%"};
  const char* p = text;
  if (*p < '0' || *p > '9') return 0;
  while (*p >= '0' && *p <= '9') p++;
  if (*p == '.') {
    p++;
    if (*p < '0' || *p > '9') return 0;
    while (*p >= '0' && *p <= '9') p++;
  }
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
    if (strcmp(p, units[i]) == 0) return 1;
  }
  return 0;
}

// A share of GPU time: 1 to 100, with or without a '%'.
static int valid_compute(const char* text) {
  char* end = NULL;
  long value = strtol(text, &end, 10);
  if (end == text || (*end != '\0' && strcmp(end, "%") != 0)) return 0;
  return text[0] >= '1' && text[0] <= '9' && value >= 1 && value <= 100;
}

static int parse_request(const char* value) {
  char copy[sizeof request];
  if (value == NULL || strlen(value) >= sizeof copy) {
    slurm_error("gpushare: --gpushare: expected production|opportunistic[,mem=SIZE][,compute=PCT]");
    return -1;
  }
  strcpy(copy, value);
  klass[0] = mem[0] = compute[0] = '\0';
  char* save = NULL;
  int first = 1;
  for (char* item = strtok_r(copy, ",", &save); item != NULL;
       item = strtok_r(NULL, ",", &save), first = 0) {
    if (first) {
      if (strcmp(item, "production") != 0 && strcmp(item, "opportunistic") != 0) {
        slurm_error(
            "gpushare: --gpushare=%s: unknown class '%s' (expected production or "
            "opportunistic)",
            value, item);
        return -1;
      }
      snprintf(klass, sizeof klass, "%s", item);
    } else if (strncmp(item, "mem=", 4) == 0 && valid_size(item + 4) &&
               strlen(item + 4) < sizeof mem) {
      snprintf(mem, sizeof mem, "%s", item + 4);
    } else if (strncmp(item, "compute=", 8) == 0 && valid_compute(item + 8)) {
      snprintf(compute, sizeof compute, "%s", item + 8);
    } else {
      slurm_error(
          "gpushare: --gpushare=%s: bad '%s' (expected mem=SIZE such as 8GiB, or "
          "compute=PCT from 1 to 100)",
          value, item);
      return -1;
    }
  }
  if (klass[0] == '\0') {
    slurm_error("gpushare: --gpushare: empty value (expected production or opportunistic)");
    return -1;
  }
  snprintf(request, sizeof request, "%s", value);
  requested = 1;
  return 0;
}

static int option_callback(int val, const char* optarg, int remote) {
  (void)val;
  (void)remote;
  return parse_request(optarg);
}

// Registered from slurm_spank_init: Slurm 22.05's sbatch ignored an
// exported spank_options table (tested), and registering works in every
// context.
static struct spank_option gpushare_option = {
    "gpushare",
    "production|opportunistic[,mem=SIZE][,compute=PCT]",
    "Share the GPU with gpushare in this class, with a memory limit (8GiB, 50%) and a share "
    "of GPU time (gpushare-slurm(7))",
    1,
    0,
    option_callback};

int slurm_spank_init(spank_t sp, int ac, char** av) {
  (void)ac;
  (void)av;
  return spank_option_register(sp, &gpushare_option) == ESPANK_SUCCESS ? 0 : -1;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char** av) {
  (void)ac;
  (void)av;
  if (!requested) return 0;
  spank_context_t context = spank_context();
  if (context == S_CTX_ALLOCATOR || context == S_CTX_LOCAL) {
    // Seen by the Prolog and Epilog as SPANK_GPUSHARE.
    if (spank_job_control_setenv(sp, "GPUSHARE", request, 1) != ESPANK_SUCCESS) {
      slurm_error("gpushare: cannot pass the request to the job's Prolog");
      return -1;
    }
  }
  return 0;
}

int slurm_spank_task_init(spank_t sp, int ac, char** av) {
  if (!requested) return 0;
  const char* interposer = GPUSHARE_DEFAULT_INTERPOSER;
  const char* socket = "/run/gpushare/gpushare.sock";
  for (int i = 0; i < ac; i++) {
    if (strncmp(av[i], "interposer=", 11) == 0) {
      interposer = av[i] + 11;
    } else if (strncmp(av[i], "socket=", 7) == 0) {
      socket = av[i] + 7;
    } else {
      slurm_error("gpushare: plugstack.conf: unknown argument '%s'", av[i]);
    }
  }
  uint32_t job_id = 0;
  if (spank_get_item(sp, S_JOB_ID, &job_id) != ESPANK_SUCCESS) return 0;
  char name[32];
  snprintf(name, sizeof name, "slurm-%u", job_id);
  spank_setenv(sp, "GPUSHARE_SLURM", "spank", 1);
  spank_setenv(sp, "GPUSHARE_QOS", klass, 1);
  spank_setenv(sp, "GPUSHARE_JOB", name, 1);
  spank_setenv(sp, "GPUSHARE_SOCKET", socket, 1);
  spank_setenv(sp, "GPUSHARE_LAUNCHED_FOR", socket, 1);
  if (mem[0] != '\0') spank_setenv(sp, "GPUSHARE_MEM_LIMIT", mem, 1);
  // Read once compute sharing lands; ignored before.
  if (compute[0] != '\0') spank_setenv(sp, "GPUSHARE_COMPUTE", compute, 1);

  // The interposer first in LD_PRELOAD, once.
  char preload[4096];
  if (spank_getenv(sp, "LD_PRELOAD", preload, sizeof preload) != ESPANK_SUCCESS) preload[0] = '\0';
  if (strstr(preload, interposer) == NULL) {
    char joined[4096 + 512];
    snprintf(joined, sizeof joined, "%s%s%s", interposer, preload[0] ? ":" : "", preload);
    spank_setenv(sp, "LD_PRELOAD", joined, 1);
  }
  return 0;
}
