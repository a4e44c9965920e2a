/**
 * Summarizes the `.cpuprofile` files `node --cpu-prof` wrote (one per thread) for bench:profile:
 * per thread, busy ms per tool call over the measured window, self time by package or file, the
 * inclusive time of this project's source files, and the heaviest functions.
 *
 *   tsx bench/cpuprofile-summary.ts <dir> [window.json] [tool calls]
 *
 * `window.json` ({ fromUs, toUs } on the monotonic clock; written by bench/fleet-profile.ts)
 * limits the samples to the measured runs (else the whole profile, start-up included).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fixed, heading, table } from './report';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** The package (node_modules/<name>), the project file, or the native frame a call frame belongs to. */
function owner(frame: CallFrame): string {
  const m = /node_modules\/(@[^/]+\/[^/]+|[^/]+)/.exec(frame.url);
  if (m) return m[1]!;
  if (!frame.url) return `(${frame.functionName || 'native'})`.slice(0, 60);
  const project = /\/(src|bench|examples)\/(.+)$/.exec(frame.url);
  if (project) return `${project[1]}/${project[2]}`;
  if (frame.url.includes('workflow-bundle')) return '(workflow bundle)';
  return frame.url.replace(/^file:\/\//, '').slice(0, 70);
}

function main(): void {
  const [dir, windowFile, callsArg] = process.argv.slice(2);
  if (!dir) throw new Error('usage: tsx bench/cpuprofile-summary.ts <dir> [window.json] [tool calls]');
  const window = windowFile ? (JSON.parse(readFileSync(windowFile, 'utf8')) as { fromUs: number; toUs: number }) : null;
  const calls = Number(callsArg ?? Number.NaN);
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .sort()) {
    const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile;
    const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
    const parent = new Map<number, number>();
    for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    const self = new Map<number, number>();
    let t = profile.startTime;
    profile.samples.forEach((id, i) => {
      t += profile.timeDeltas[i]!;
      if (window && (t < window.fromUs || t > window.toUs)) return;
      self.set(id, (self.get(id) ?? 0) + profile.timeDeltas[i]! / 1000);
    });
    const total = [...self.values()].reduce((a, b) => a + b, 0);
    const byOwner = new Map<string, number>();
    const byFunction = new Map<string, number>();
    const inclusive = new Map<string, number>();
    for (const [id, ms] of self) {
      const frame = nodes.get(id)!.callFrame;
      byOwner.set(owner(frame), (byOwner.get(owner(frame)) ?? 0) + ms);
      const fn = `${frame.functionName || '(anonymous)'} ${frame.url.split('/').pop() ?? ''}:${frame.lineNumber + 1}`;
      byFunction.set(fn, (byFunction.get(fn) ?? 0) + ms);
      const seen = new Set<string>();
      for (let x: number | undefined = id; x !== undefined; x = parent.get(x)) {
        const o = owner(nodes.get(x)!.callFrame);
        if (o.startsWith('src/') && !seen.has(o)) {
          seen.add(o);
          inclusive.set(o, (inclusive.get(o) ?? 0) + ms);
        }
      }
    }
    const idle = byOwner.get('((idle))') ?? 0;
    const perCall = (ms: number): string => (Number.isFinite(calls) ? fixed(ms / calls, 2) : '–');
    heading(
      `${file}: ${fixed(total, 0)} ms sampled${window ? ' in the measured window' : ''}, ${fixed(total - idle, 0)} ms busy${Number.isFinite(calls) ? ` (${perCall(total - idle)} ms per tool call)` : ''}`,
    );
    const top = (m: Map<string, number>, n: number): Array<[string, number]> =>
      [...m]
        .filter(([k]) => k !== '((idle))' && !k.startsWith('(idle) '))
        .sort((a, b) => b[1] - a[1])
        .slice(0, n);
    table(
      ['self time by package / file', 'ms', 'ms per tool call', '% of busy'],
      top(byOwner, 15).map(([k, ms]) => [k, fixed(ms, 0), perCall(ms), fixed((100 * ms) / (total - idle), 1)]),
    );
    if (inclusive.size > 0) {
      console.log('');
      table(
        ['project file (inclusive: its own code and what it calls)', 'ms', 'ms per tool call', '% of busy'],
        top(inclusive, 12).map(([k, ms]) => [k, fixed(ms, 0), perCall(ms), fixed((100 * ms) / (total - idle), 1)]),
      );
    }
    console.log('');
    table(
      ['heaviest functions (self)', 'ms', 'ms per tool call'],
      top(byFunction, 10).map(([k, ms]) => [k.length > 90 ? `${k.slice(0, 87)}…` : k, fixed(ms, 0), perCall(ms)]),
    );
  }
}

main();
