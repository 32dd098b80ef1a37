"""scripts/gpu-check's report: report.json as it is, and summary.md, the
same for people (docs/validation.md, "The report")."""

import json
import os

def write_report(outdir, report):
    with open(os.path.join(outdir, "report.json"), "w") as out:
        json.dump(report, out, indent=2)
        out.write("\n")
    with open(os.path.join(outdir, "summary.md"), "w") as out:
        out.write(markdown(report))


def cell(value):
    return str(value).replace("|", "\\|").replace("\n", " ")


def shown(value):
    """A measurement as a person reads it: no quotes, whole numbers whole."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (int, float, str)):
        return str(value)
    return json.dumps(value)


def measurement_table(measurements):
    """One row per measurement; when every value is an object with the same
    keys (the calibration's measured / sim_default / sim_setting), those
    keys are the columns."""
    values = list(measurements.values())
    if all(isinstance(v, dict) for v in values) and \
            all(list(v.keys()) == list(values[0].keys()) for v in values):
        keys = list(values[0].keys())
        lines = ["| measurement | " + " | ".join(keys) + " |", "|---" * (len(keys) + 1) + "|"]
        for name, value in measurements.items():
            lines.append(f"| {name} | " + " | ".join(cell(shown(value[k])) for k in keys) + " |")
        return lines
    lines = ["| measurement | value |", "|---|---|"]
    for name, value in measurements.items():
        lines.append(f"| {name} | {cell(shown(value))} |")
    return lines


def seconds(check):
    """The check's time against its budget, as the table shows it."""
    text = f"{check['duration_s']:.1f} of {check['budget_s']}"
    if check.get("stopped"):
        return f"**{text}, stopped**"
    return f"**{text}, over**" if check.get("over_budget") else text


def markdown(report):
    machine = report["machine"]
    lines = ["# gpushare GPU check", ""]
    lines.append(f"- status: **{report['status']}**" +
                 (f" ({report['reason']})" if report.get("reason") else ""))
    lines.append(f"- mode: {report['mode']}" + (", quick" if report.get("quick") else ""))
    lines.append(f"- date: {report['started_at']}")
    for key in ("gpu", "driver", "cuda_driver_api", "torch"):
        lines.append(f"- {key}: {machine.get(key) or 'unknown'}")
    installed = report.get("gpushare") or {}
    lines.append(f"- gpushare: {installed.get('version_line') or 'unknown'}" +
                 (f", installed in {installed['prefix']}" if installed.get("prefix") else ""))
    if report["checks"]:
        over = [c["name"] for c in report["checks"] if c.get("over_budget")]
        lines.append(f"- time: {report['duration_s']:.0f} s for the checks, budgets "
                     f"{report['budget_s']} s (the suite's limit {report['limit_s']} s)" +
                     (f"; over budget: {', '.join(over)}" if over else ""))
        lines.append("- evidence: NAME/ per check, all in " +
                     (report.get("evidence_archive") or {}).get("path", "-") + " (at most 16 MiB)")
    lines.append("")
    if not report["checks"]:
        lines.append("No check ran.")
        return "\n".join(lines) + "\n"
    lines += ["| check | status | summary | seconds of budget |", "|---|---|---|---|"]
    for check in report["checks"]:
        lines.append(f"| {check['name']} | {check['status']} | {cell(check['summary'])} | "
                     f"{seconds(check)} |")
    for check in report["checks"]:
        if not check["measurements"]:
            continue
        lines += ["", f"## {check['name']}", ""]
        lines += measurement_table(check["measurements"])
        settings = check["details"].get("sim_settings")
        if settings:
            lines += ["", "The simulated GPU set from these measurements:", "", "```sh",
                      "export " + " ".join(f"{k}={v}" for k, v in sorted(settings.items())),
                      "```"]
    return "\n".join(lines) + "\n"
