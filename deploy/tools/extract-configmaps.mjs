// Writes every ConfigMap's data of Kubernetes manifests to OUT/<configmap name>/<key>, so that
// deploy/check.sh can run `faultline check` and `faultline rules test` on the configs and rules
// the manifests carry. Usage: node extract-configmaps.mjs OUT FILE.yaml...
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";

const [out, ...files] = process.argv.slice(2);
let written = 0;
for (const file of files) {
  for (const doc of parseAllDocuments(readFileSync(file, "utf8"))) {
    const value = doc.toJS();
    if (value?.kind !== "ConfigMap") continue;
    const folder = join(out, value.metadata.name);
    mkdirSync(folder, { recursive: true });
    for (const [key, text] of Object.entries(value.data ?? {})) {
      writeFileSync(join(folder, key), text);
      written++;
    }
  }
}
console.log(`configmaps: ${written} files written to ${out}`);
