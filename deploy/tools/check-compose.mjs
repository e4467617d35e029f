// What dclint (schema and conventions) does not check in a Compose file: that every local
// file or folder it mounts or builds from exists, relative to the Compose file, as `docker
// compose up` needs them. Usage: node check-compose.mjs compose.yaml   Exit 1 if one is missing.
import { existsSync, readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { parse } from "yaml";

const file = process.argv[2];
const base = dirname(resolve(file));
const compose = parse(readFileSync(file, "utf8"));
const missing = [];
let checked = 0;
const need = (path, what) => {
  checked++;
  if (!existsSync(resolve(base, path))) missing.push(`${what}: ${path} does not exist`);
};
for (const [name, service] of Object.entries(compose.services ?? {})) {
  if (service.build) {
    const context = typeof service.build === "string" ? service.build : service.build.context;
    need(context, `${name} build context`);
    if (service.build.dockerfile) {
      need(resolve(base, context, service.build.dockerfile), `${name} dockerfile`);
    }
  }
  for (const volume of service.volumes ?? []) {
    const source = typeof volume === "string" ? volume.split(":")[0] : volume.source;
    if (source && (source.startsWith(".") || source.startsWith("/"))) {
      need(source, `${name} volume`);
    }
  }
}
for (const m of missing) console.error(`${file}: ${m}`);
console.log(`compose: ${checked} local paths checked, ${missing.length} missing`);
process.exit(missing.length ? 1 : 0);
