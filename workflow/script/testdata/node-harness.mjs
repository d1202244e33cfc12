// Runs an agent's script as Node.js runs it, against stub tools: each
// call mcp.<server>.<tool>(args) is recorded and answered from the stubs
// ("server.tool" -> JSON, {"ok": true} when absent). Prints the calls and
// the script's result as one JSON line. Usage: node node-harness.mjs
// SCRIPT.js STUBS.json
import { readFileSync } from "node:fs";

const [script, stubsFile] = process.argv.slice(2);
const stubs = JSON.parse(readFileSync(stubsFile, "utf8"));
const calls = [];
const mcp = new Proxy({}, {
  get: (_, server) => new Proxy({}, {
    get: (_, tool) => async (args) => {
      calls.push({ server, tool, args: args === undefined ? {} : JSON.parse(JSON.stringify(args)) });
      const answer = stubs[`${server}.${tool}`];
      return answer === undefined ? { ok: true } : JSON.parse(JSON.stringify(answer));
    },
  }),
});
const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor;
const run = new AsyncFunction("mcp", '"use strict";\n' + readFileSync(script, "utf8"));
const result = await run(mcp);
console.log(JSON.stringify({ calls, result: result === undefined ? null : result }));
