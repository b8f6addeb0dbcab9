// A process's CPU time as Linux's /proc gives it, for the bench's generators (bench/load.mjs, bench/open-loop.mjs).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** Clock ticks a second (`getconf CLK_TCK`; 100 when it cannot say). */
export const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** utime + stime in clock ticks of one process (all its threads); undefined when it is gone. */
export function ownTicks(pid) {
  try {
    // Fields after the command name, which may hold spaces: state is field 3,
    // utime field 14, stime field 15 (proc(5)).
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return undefined;
  }
}
