// Checks a Grafana dashboard JSON (deploy/grafana/dashboards/faultline.json) offline:
//  - its structure: unique panel ids, every panel inside the 24-column grid and overlapping no
//    other, a Prometheus datasource of ${datasource} on every query panel and target, an expr on
//    every target, every $variable an expr uses defined in templating (or a Grafana built-in);
//  - its PromQL: writes every target's expr, with the variables expanded as the dashboard's
//    defaults would, into a Prometheus rule file (OUT) that deploy/check.sh hands to
//    `promtool check rules`, so Prometheus' own parser checks each query.
// Usage: node check-dashboard.mjs DASHBOARD.json OUT.rules.yml   Exit 1 on any problem.
import { readFileSync, writeFileSync } from "node:fs";
import { stringify } from "yaml";

const [file, out] = process.argv.slice(2);
const dashboard = JSON.parse(readFileSync(file, "utf8"));
const problems = [];
const builtins = new Set(["__rate_interval", "__interval", "__range", "__range_s", "__range_ms",
                          "__interval_ms"]);
const variables = new Set((dashboard.templating?.list ?? []).map((v) => v.name));
if (!dashboard.uid || !dashboard.title) problems.push("dashboard needs a uid and a title");

const ids = new Set();
const cells = new Map();
const rules = [];
for (const panel of dashboard.panels ?? []) {
  const where = `panel ${panel.id} '${panel.title}'`;
  if (ids.has(panel.id)) problems.push(`${where}: duplicate id`);
  ids.add(panel.id);
  const g = panel.gridPos;
  if (!g || g.x < 0 || g.w < 1 || g.x + g.w > 24 || g.h < 1) {
    problems.push(`${where}: gridPos outside the 24-column grid`);
  } else {
    for (let y = g.y; y < g.y + g.h; y++) {
      for (let x = g.x; x < g.x + g.w; x++) {
        const key = `${x},${y}`;
        if (cells.has(key)) problems.push(`${where}: overlaps panel ${cells.get(key)} at ${key}`);
        cells.set(key, panel.id);
      }
    }
  }
  if (panel.type === "row") continue;
  const isPrometheus = (ds) => ds?.type === "prometheus" && ds?.uid === "${datasource}";
  if (!isPrometheus(panel.datasource)) problems.push(`${where}: datasource is not \${datasource}`);
  if (!panel.targets?.length) problems.push(`${where}: no query`);
  for (const target of panel.targets ?? []) {
    if (!isPrometheus(target.datasource)) {
      problems.push(`${where} ${target.refId}: datasource is not \${datasource}`);
    }
    if (typeof target.expr !== "string" || !target.expr.trim()) {
      problems.push(`${where} ${target.refId}: no expr`);
      continue;
    }
    for (const [, name] of target.expr.matchAll(/\$\{?(\w+)\}?/g)) {
      if (!variables.has(name) && !builtins.has(name)) {
        problems.push(`${where} ${target.refId}: undefined variable $${name}`);
      }
    }
    const expr = target.expr
      .replaceAll("$__rate_interval", "1m")
      .replaceAll("$__interval", "15s")
      .replaceAll("$__range", "6h")
      .replace(/\$\{?(\w+)\}?/g, ".*");
    rules.push({ record: `dashboard:panel_${panel.id}_${target.refId}`, expr });
  }
}
writeFileSync(out, stringify({ groups: [{ name: "dashboard-queries", rules }] }));
for (const p of problems) console.error(`${file}: ${p}`);
console.log(`grafana: ${ids.size} panels, ${rules.length} queries, ${problems.length} problems`);
process.exit(problems.length ? 1 : 0);
