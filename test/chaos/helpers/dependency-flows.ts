/**
 * Flows for the dependency suite: a dependent and its N members, and the ways publishers on any SDK
 * send them, generated from a seeded random source.
 */
import type { Random } from '../../../lib/random';
import type { JournalPayload } from '../fixtures/journal-tasks/journal';

/** Where the dependent goes among its members' messages. */
export const ORDERS = ['dependent-first', 'dependent-last', 'same-batch', 'other-batch', 'spread'] as const;
export type Order = (typeof ORDERS)[number];

/**
 * What a member does: succeeds; fails for good (archived `unrecoverable`); is parked for later and
 * cancelled there, or cancelled while it runs; carries an `expiresAt` already past, or one that
 * races its delivery.
 */
export type MemberKind = 'ok' | 'fail' | 'cancel-parked' | 'cancel-running' | 'expired' | 'expiring';

export interface MemberPlan {
  readonly id: string;
  readonly kind: MemberKind;
  readonly ms: number;
}

export interface FlowPlan {
  readonly index: number;
  /** The dependent's job id. */
  readonly id: string;
  readonly members: readonly MemberPlan[];
  readonly order: Order;
  readonly dependentMs: number;
  /** Members whose message is sent twice (the same body). */
  readonly duplicated: readonly string[];
  /** The dependent's message is sent twice. */
  readonly dependentTwice: boolean;
  /** `spread`: the members are sent over this many ms. */
  readonly spreadMs: number;
}

/** Members per flow, 1..100, skewed small: most flows have a few, some dozens, a few the full hundred. */
function memberCount(random: Random): number {
  const r = random();
  const between = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  if (r < 0.75) return between(1, 2);
  if (r < 0.92) return between(3, 8);
  if (r < 0.98) return between(9, 30);
  return between(31, 100);
}

/** `count` flows from `random`; the first has 100 members and the second one, so both ends of the range are always there. */
export function planFlows(random: Random, count: number): FlowPlan[] {
  const flows: FlowPlan[] = [];
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  for (let index = 0; index < count; index++) {
    const id = `flow-${index}`;
    const n = index === 0 ? 100 : index === 1 ? 1 : memberCount(random);
    const kinds: MemberKind[] = Array.from({ length: n }, () => 'ok');
    const place = (kind: MemberKind) => {
      const free = kinds.flatMap((k, i) => (k === 'ok' ? [i] : []));
      if (free.length > 0) kinds[pick(free)] = kind;
    };
    if (random() < 0.12) place('fail');
    if (random() < 0.08) place(random() < 0.5 ? 'cancel-parked' : 'cancel-running');
    if (random() < 0.08) place(random() < 0.5 ? 'expired' : 'expiring');
    const members = kinds.map((kind, i) => ({
      id: `${id}.m${i}`,
      kind,
      ms: kind === 'cancel-running' ? 1200 : Math.floor(random() * 60),
    }));
    const oks = members.filter((m) => m.kind === 'ok');
    const duplicated =
      random() < 0.2 ? [...new Set(Array.from({ length: 1 + Math.floor(random() * 3) }, () => pick(oks)?.id))].filter((m) => m) : [];
    flows.push({
      index,
      id,
      members,
      order: pick(ORDERS),
      dependentMs: Math.floor(random() * 30),
      duplicated: duplicated as string[],
      dependentTwice: random() < 0.1,
      spreadMs: 500 + Math.floor(random() * 5500),
    });
  }
  return flows;
}

/** One SendMessageBatch call of a flow: its bodies, and when (ms after the flow starts) it is made. */
export interface Send {
  readonly atMs: number;
  readonly bodies: readonly string[];
}

const chunks = <T>(items: readonly T[], size: number): T[][] =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size));

/**
 * The SendMessageBatch calls a flow is published with, in its order: bodies built at `now` (the
 * members' `runAt` and `expiresAt` are relative to it). The dependent names its members in
 * `dependsOn`, as a raw envelope from any SDK does.
 */
export function sendsOf(flow: FlowPlan, journal: string, now: number, random: Random): Send[] {
  const shuffle = <T>(items: readonly T[]): T[] => {
    const out = [...items];
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [out[i], out[j]] = [out[j] as T, out[i] as T];
    }
    return out;
  };
  const memberBody = (m: MemberPlan) => {
    const payload: JournalPayload = { journal, ms: m.ms, ...(m.kind === 'fail' ? { fail: true } : {}) };
    return JSON.stringify({
      task: 'journal',
      id: m.id,
      payload,
      ...(m.kind === 'cancel-parked' ? { runAt: now + 20 * 60_000 } : {}),
      ...(m.kind === 'expired' ? { expiresAt: now - 1000 } : {}),
      ...(m.kind === 'expiring' ? { expiresAt: now + Math.floor(random() * 1500) } : {}),
    });
  };
  const dependent = JSON.stringify({
    task: 'journal',
    id: flow.id,
    payload: { journal, ms: flow.dependentMs } satisfies JournalPayload,
    dependsOn: flow.members.map((m) => m.id),
  });
  const members = shuffle(flow.members).map(memberBody);
  // Duplicates: the same body again, in the same batch as the first or on its own a little later.
  const again = flow.duplicated.map((id) => memberBody(flow.members.find((m) => m.id === id) as MemberPlan));
  const sends: Send[] = [];
  const gap = () => Math.floor(random() * 200);
  switch (flow.order) {
    case 'dependent-first': {
      sends.push({ atMs: 0, bodies: [dependent] });
      let at = gap();
      for (const batch of chunks(members, 10)) {
        sends.push({ atMs: at, bodies: batch });
        at += gap();
      }
      break;
    }
    case 'dependent-last': {
      let at = 0;
      for (const batch of chunks(members, 10)) {
        sends.push({ atMs: at, bodies: batch });
        at += gap();
      }
      sends.push({ atMs: at + Math.floor(random() * 500), bodies: [dependent] });
      break;
    }
    case 'same-batch': {
      const all = [...members];
      all.splice(Math.floor(random() * (all.length + 1)), 0, dependent);
      let at = 0;
      for (const batch of chunks(all, 10)) {
        sends.push({ atMs: at, bodies: batch });
        at += gap();
      }
      break;
    }
    case 'other-batch': {
      const batches: string[][] = chunks(members, 10);
      batches.splice(Math.floor(random() * (batches.length + 1)), 0, [dependent]);
      let at = 0;
      for (const batch of batches) {
        sends.push({ atMs: at, bodies: batch });
        at += gap();
      }
      break;
    }
    case 'spread': {
      for (const body of members) sends.push({ atMs: Math.floor(random() * flow.spreadMs), bodies: [body] });
      sends.push({ atMs: Math.floor(random() * flow.spreadMs), bodies: [dependent] });
      break;
    }
  }
  for (const body of again) {
    const into = random() < 0.5 ? sends.find((s) => s.bodies.length < 10 && s.bodies.includes(body)) : undefined;
    if (into) (into.bodies as string[]).push(body);
    else sends.push({ atMs: Math.floor(random() * 3000), bodies: [body] });
  }
  if (flow.dependentTwice) sends.push({ atMs: Math.floor(random() * 3000), bodies: [dependent] });
  return sends.sort((a, b) => a.atMs - b.atMs);
}
