// Summarises a V8 CPU profile (`node --cpu-prof`, BENCH_PROFILE=1): the
// share of sampled time per function (self time) and per origin (a package,
// node's internals, the built program), idle and GC apart.
// Usage: node bench/profile-summary.mjs FILE.cpuprofile [top N]
import { readFileSync } from 'node:fs';

const [file, topArg] = process.argv.slice(2);
if (file === undefined) {
  process.stderr.write('usage: node bench/profile-summary.mjs FILE.cpuprofile [top N]\n');
  process.exit(2);
}
const profile = JSON.parse(readFileSync(file, 'utf8'));
const top = Number(topArg ?? 30);
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map();
for (let i = 0; i < profile.samples.length; i++) {
  const id = profile.samples[i];
  self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
}
const origin = (url) => {
  if (url === '') return '(native)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1];
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0]}`;
  return url.replace(/^file:\/\/.*\/(dist|src|bench)\//, '$1/');
};
const functions = new Map();
const origins = new Map();
let total = 0;
for (const [id, time] of self) {
  const node = byId.get(id);
  const frame = node.callFrame;
  total += time;
  const name = `${frame.functionName || '(anonymous)'} ${origin(frame.url)}:${frame.lineNumber + 1}`;
  functions.set(name, (functions.get(name) ?? 0) + time);
  const key = ['(idle)', '(garbage collector)', '(program)'].includes(frame.functionName)
    ? frame.functionName
    : origin(frame.url);
  origins.set(key, (origins.get(key) ?? 0) + time);
}
const pct = (t) => `${((100 * t) / total).toFixed(1).padStart(5)} %`;
const busy = total - (origins.get('(idle)') ?? 0);
process.stdout.write(
  `${(total / 1e6).toFixed(1)} s sampled, ${(busy / 1e6).toFixed(1)} s busy\n\nby origin (self time)\n`,
);
for (const [k, t] of [...origins].sort((a, b) => b[1] - a[1]).slice(0, 20)) process.stdout.write(`${pct(t)}  ${k}\n`);
process.stdout.write(`\nby function (self time), top ${top}\n`);
for (const [k, t] of [...functions].sort((a, b) => b[1] - a[1]).slice(0, top))
  process.stdout.write(`${pct(t)}  ${k}\n`);
