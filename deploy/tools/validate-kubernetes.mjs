// Validates Kubernetes manifests offline, as an API server would before admitting them:
//  1. the schema of each kind (types, required fields, formats such as resource quantities), with
//     the kubernetes-models validators (core kinds; Prometheus Operator's PodMonitor and
//     ServiceMonitor from @kubernetes-models/prometheus-operator);
//  2. no unknown field (what `kubectl apply --validate=strict` rejects and kubernetes-models
//     lets through), against the field lists of the official client's generated models
//     (@kubernetes/client-node), for the core kinds.
// Usage: node validate-kubernetes.mjs FILE.yaml...   Exit 1 on any error, each printed with the
// file, the document's kind/name and the field's path. Before the files, it checks itself on a
// good manifest and on copies broken in each way it claims to catch, so a validator that
// accepts anything fails too.
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";
import * as core from "kubernetes-models/v1";
import * as apps from "kubernetes-models/apps/v1";
import * as batch from "kubernetes-models/batch/v1";
import * as monitoring from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1";
import * as clientModels from "@kubernetes/client-node/dist/gen/models/ObjectSerializer.js";

const models = {
  v1: core,
  "apps/v1": apps,
  "batch/v1": batch,
  "monitoring.coreos.com/v1": monitoring,
};

// The client model of a core kind ("apps/v1", "DaemonSet" -> V1DaemonSet), or null.
function clientModelName(apiVersion, kind) {
  const version = apiVersion.split("/").pop();
  const name = version.charAt(0).toUpperCase() + version.slice(1) + kind;
  return clientModels[name] ? name : null;
}

// Every key of `value` not in the model `type` (recursively); pushes "path: unknown field".
function unknownFields(value, type, path, errors) {
  if (value === null || value === undefined) return;
  let m = /^Array<(.+)>$/.exec(type);
  if (m) {
    if (Array.isArray(value)) value.forEach((v, i) => unknownFields(v, m[1], `${path}[${i}]`, errors));
    return;
  }
  m = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (m) {
    if (typeof value === "object") {
      for (const [k, v] of Object.entries(value)) unknownFields(v, m[1], `${path}.${k}`, errors);
    }
    return;
  }
  const model = clientModels[type];
  if (!model || typeof model.getAttributeTypeMap !== "function") return;  // string, IntOrString...
  if (typeof value !== "object" || Array.isArray(value)) return;  // the schema check reports it
  const attributes = new Map(model.getAttributeTypeMap().map((a) => [a.baseName, a.type]));
  for (const [k, v] of Object.entries(value)) {
    if (!attributes.has(k)) {
      errors.push(`${path}.${k}: unknown field (not in ${type})`);
    } else {
      unknownFields(v, attributes.get(k), `${path}.${k}`, errors);
    }
  }
}

// The errors of one manifest document, as strings.
function validate(doc) {
  const errors = [];
  if (typeof doc !== "object" || doc === null) return ["not a mapping"];
  const { apiVersion, kind } = doc;
  const group = models[apiVersion];
  const Model = group && group[kind];
  if (!Model) return [`no schema for apiVersion ${apiVersion} kind ${kind}`];
  try {
    new Model(doc).validate();
  } catch (e) {
    errors.push(...String(e.message).split(", ").map((s) => s.replace(/^data/, "")));
  }
  const clientName = clientModelName(apiVersion, kind);
  if (clientName) unknownFields(doc, clientName, "", errors);
  return errors;
}

// Documents of a YAML file (YAML errors are errors too).
function load(file) {
  const docs = parseAllDocuments(readFileSync(file, "utf8"));
  const out = [];
  for (const d of docs) {
    if (d.errors.length) throw new Error(`${file}: ${d.errors.map((e) => e.message).join("; ")}`);
    const value = d.toJS({ maxAliasCount: 100 });
    if (value !== null) out.push(value);
  }
  return out;
}

function selfTest() {
  const good = {
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: { name: "self-test" },
    spec: {
      selector: { matchLabels: { app: "x" } },
      template: {
        metadata: { labels: { app: "x" } },
        spec: {
          containers: [{ name: "c", image: "i", resources: { limits: { memory: "64Mi" } },
                         ports: [{ name: "p", containerPort: 9464 }] }],
        },
      },
    },
  };
  const broken = {
    "a misspelt field": (d) => { d.spec.template.spec.containers[0].imagePullPolicyy = "Always"; },
    "a misspelt nested field": (d) => { d.spec.template.spec.containers[0].resources.limit = {}; },
    "a port that is not a number": (d) => { d.spec.template.spec.containers[0].ports[0].containerPort = "x"; },
    "a malformed quantity": (d) => { d.spec.template.spec.containers[0].resources.limits.memory = "64 MB"; },
    "a missing required field": (d) => { delete d.spec.selector; },
  };
  const failures = [];
  if (validate(good).length) failures.push(`good manifest rejected: ${validate(good).join("; ")}`);
  for (const [what, breakIt] of Object.entries(broken)) {
    const d = structuredClone(good);
    breakIt(d);
    if (validate(d).length === 0) failures.push(`${what} was accepted`);
  }
  return failures;
}

const selfFailures = selfTest();
if (selfFailures.length) {
  for (const f of selfFailures) console.error(`validator self-test: ${f}`);
  process.exit(1);
}
let failed = 0;
let checked = 0;
for (const file of process.argv.slice(2)) {
  let docs;
  try {
    docs = load(file);
  } catch (e) {
    console.error(e.message);
    failed++;
    continue;
  }
  for (const doc of docs) {
    checked++;
    const name = `${file}: ${doc.kind}/${doc.metadata?.name}`;
    const errors = validate(doc);
    for (const e of errors) console.error(`${name}: ${e}`);
    if (errors.length) failed++;
  }
}
console.log(`kubernetes: ${checked} manifests checked, ${failed} invalid`);
process.exit(failed ? 1 : 0);
