# The layout's promise (CONTRIBUTING.md, "Where things live"), checked: each
# folder of lib/ includes only the folders its row of the table names, and
# inside lib/interpose and lib/coord/server a room includes only itself and
# the rooms below it (no arrow back up); inside the folders listed under
# `floors` below, a file includes only the files on its floor or below. A file is held to the rule of the
# deepest folder listed here that holds it: a new subfolder inherits its
# parent's rule until it is given its own, and a file under lib/ that no
# rule covers fails the check. Give a new folder its row here and in
# CONTRIBUTING.md.
#
# Run: cmake -D SOURCE_DIR=<repo> -P tests/cmake/layout-rules.cmake
# Each rule: "FOLDER|ALLOWED,PREFIXES" (include paths as written, relative to
# lib/); a file's own folder is always allowed. Files directly in FOLDER and
# in subfolders without a rule of their own are checked against FOLDER's rule.
# lib/replay reaches lib/place for the cluster model and Algorithm 1's rules
# only, never through the Placer; lib/place includes nothing of lib/replay.

# The interposer's door into the job side (lib/coord/job): the owner of the
# limits and the class, the yield, and the counters it keeps for the client.
# Only startup.cc, which starts the client, includes job_client.h too.
set(job_door "coord/job/limits.h,coord/job/yield.h,coord/job/local_counters.h")

set(rules
  "lib/vocab|vocab/"
  "lib/common|common/,vocab/"
  "lib/cudaapi|cudaapi/"
  "lib/kernels|kernels/"
  "lib/coord/contract|coord/contract/,vocab/,common/"
  "lib/coord/job|coord/job/,coord/contract/,vocab/"
  "lib/coord/server/registry|coord/server/registry/,coord/contract/,common/,vocab/"
  "lib/coord/server/compute|coord/server/compute/,coord/server/registry/,coord/contract/,common/,vocab/"
  "lib/coord/server/memory|coord/server/memory/,coord/server/registry/,coord/contract/,common/,vocab/"
  "lib/coord/server|coord/server/,coord/contract/,common/,vocab/"
  "lib/coord/ctl|coord/ctl/,coord/contract/,common/,vocab/"
  "lib/interpose/driver|interpose/driver/,cudaapi/"
  "lib/interpose/core|interpose/core/,interpose/driver/,${job_door},coord/contract/,vocab/"
  "lib/interpose/memory|interpose/memory/,interpose/core/,interpose/driver/,${job_door},coord/contract/,vocab/"
  "lib/interpose/compute|interpose/compute/,interpose/core/,interpose/driver/,${job_door},coord/contract/,vocab/"
  "lib/interpose/hooks|interpose/hooks/,interpose/memory/,interpose/compute/,interpose/core/,interpose/driver/,${job_door},coord/contract/,cudaapi/,vocab/"
  "lib/interpose/audit|interpose/audit/,interpose/core/,interpose/driver/"
  "lib/interpose|interpose/,${job_door},coord/job/job_client.h,coord/contract/,cudaapi/,vocab/"
  "lib/runner|runner/,common/,coord/contract/,vocab/"
  "lib/simgpu|simgpu/,cudaapi/,vocab/"
  "lib/place/cluster|place/cluster/,common/,vocab/"
  "lib/place|place/,common/,vocab/"
  "lib/replay|replay/,place/antman_rules.h,place/cluster/cluster.h,common/,vocab/"
  "lib/probe|probe/,runner/,common/,vocab/")

# Folders whose files stand on floors, from the bottom up: a file (its .h
# and .cc together, by name) includes only files of the folder named before
# it, or itself; a file of the folder missing from its list fails. The job
# side: the clock and the interposer's counters at the bottom, the client's
# API (job_client) on top. The memory room: what the movers share
# (memory_work) at the bottom, the memory worker that calls them on top.
set(floors
  "lib/coord/job|clock local_counters wire wakeup memory_telemetry client_state yield limits registration job_client"
  "lib/interpose/memory|memory_work spill_plan spill_batch spill pools spill_async vmm_backing suspend residency tree memory_worker")

# The most specific rule for a file: the longest folder that holds it.
function(rule_for file out_folder out_allowed)
  set(best "")
  set(best_allowed "")
  foreach(rule ${rules})
    string(REPLACE "|" ";" parts "${rule}")
    list(GET parts 0 folder)
    string(LENGTH "${folder}" length)
    string(LENGTH "${best}" best_length)
    if(file MATCHES "^${folder}/" AND length GREATER best_length)
      set(best "${folder}")
      string(REPLACE "${folder}|" "" best_allowed "${rule}")
    endif()
  endforeach()
  set(${out_folder} "${best}" PARENT_SCOPE)
  set(${out_allowed} "${best_allowed}" PARENT_SCOPE)
endfunction()

file(GLOB_RECURSE sources RELATIVE ${SOURCE_DIR} ${SOURCE_DIR}/lib/*.cc ${SOURCE_DIR}/lib/*.h
     ${SOURCE_DIR}/lib/*.c ${SOURCE_DIR}/lib/*.inl ${SOURCE_DIR}/lib/*.def)
set(checked 0)
foreach(source ${sources})
  rule_for(${source} folder allowed)
  if(folder STREQUAL "")
    message(SEND_ERROR "${source}: its folder has no rule in tests/cmake/layout-rules.cmake "
                       "(give it a row there and in CONTRIBUTING.md)")
    continue()
  endif()
  string(REPLACE "," "|" allowed_regex "${allowed}")
  file(STRINGS ${SOURCE_DIR}/${source} includes REGEX "^#include \"[a-z_]+/")
  foreach(line ${includes})
    string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" path "${line}")
    if(NOT path MATCHES "^(${allowed_regex})")
      message(SEND_ERROR "${source}: includes \"${path}\": ${folder} may include only ${allowed}")
    endif()
  endforeach()
  math(EXPR checked "${checked} + 1")
endforeach()

# Floors inside a folder: no include runs back up.
set(floored 0)
foreach(entry ${floors})
  string(REPLACE "|" ";" parts "${entry}")
  list(GET parts 0 folder)
  list(GET parts 1 order)
  string(REPLACE " " ";" order "${order}")
  string(REGEX REPLACE "^lib/" "" include_prefix "${folder}/")
  file(GLOB members RELATIVE ${SOURCE_DIR}/${folder} ${SOURCE_DIR}/${folder}/*.h
       ${SOURCE_DIR}/${folder}/*.cc)
  foreach(member ${members})
    string(REGEX REPLACE "\\.(h|cc)$" "" stem "${member}")
    list(FIND order "${stem}" floor)
    if(floor LESS 0)
      message(SEND_ERROR "${folder}/${member}: not on the floors of ${folder} in "
                         "tests/cmake/layout-rules.cmake (give it its floor there)")
      continue()
    endif()
    file(STRINGS ${SOURCE_DIR}/${folder}/${member} includes
         REGEX "^#include \"${include_prefix}[a-z_]+\\.h\"")
    foreach(line ${includes})
      string(REGEX REPLACE "^#include \"${include_prefix}([a-z_]+)\\.h\".*" "\\1" other "${line}")
      list(FIND order "${other}" other_floor)
      if(other_floor GREATER floor)
        message(SEND_ERROR "${folder}/${member}: includes ${other}.h, which stands above it "
                           "(an arrow back up; the floors of ${folder} are: ${order})")
      endif()
    endforeach()
    math(EXPR floored "${floored} + 1")
  endforeach()
endforeach()
message(STATUS "layout-rules: ${checked} files checked, ${floored} of them on floors")
