/**
 * Example flow: classify new community threads and alert Slack about the urgent ones.
 *
 * Two concrete versions share the alias `communityThreads`. Callers start the alias; each run
 * keeps its concrete slug, so v1 runs finish on v1 handlers while new runs use v2. Both
 * versions put `classify` (and v2's `score`) on the shared `classify_threads` queue and the
 * Slack delivery on `deliver_slack_alerts`.
 *
 * The handlers are deliberately local: classification uses keywords, and delivery posts to
 * `SLACK_WEBHOOK_URL` only when it is set (otherwise it returns the message it would post).
 * Replace them with your own calls.
 *
 * @module
 */
import { defineDeployedFlow, Flow, routeFlow } from 'switchyard';

/**
 * The input of a run: one community thread.
 *
 * @example
 * ```ts
 * import type { Thread } from './community_threads.ts';
 *
 * const thread: Thread = { id: 't1', title: 'Checkout is down', body: 'since 9:00' };
 * ```
 */
export interface Thread {
  id: string;
  title: string;
  body: string;
}

const URGENT = /\b(outage|down|broken|urgent|security|leak|refund)\b/i;

/**
 * Keyword classification shared by both versions.
 *
 * @example
 * ```ts
 * import { classifyThread } from './community_threads.ts';
 *
 * console.assert(classifyThread({ id: 't1', title: 'Site down', body: '' }).label === 'urgent');
 * ```
 */
export function classifyThread(thread: Thread): { label: 'urgent' | 'routine'; words: number } {
  const text = `${thread.title} ${thread.body}`;
  return {
    label: URGENT.test(text) ? 'urgent' : 'routine',
    words: text.split(/\s+/).filter(Boolean).length,
  };
}

/**
 * Posts `text` to Slack when `SLACK_WEBHOOK_URL` is set; otherwise reports a dry run.
 *
 * @example
 * ```ts
 * import { postToSlack } from './community_threads.ts';
 *
 * const result = await postToSlack('hello', AbortSignal.timeout(5_000));
 * console.log(result.posted ? 'posted' : `dry run: ${result.text}`);
 * ```
 */
export async function postToSlack(
  text: string,
  signal: AbortSignal,
): Promise<{ posted: boolean; text: string }> {
  const url = Deno.env.get('SLACK_WEBHOOK_URL');
  if (!url) return { posted: false, text };
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ text }),
    signal,
  });
  if (!response.ok) throw new Error(`Slack answered ${response.status} ${response.statusText}`);
  await response.body?.cancel();
  return { posted: true, text };
}

const v1 = new Flow<Thread>({ slug: 'communityThreadsV1', maxAttempts: 3, baseDelay: 1 })
  .step({ slug: 'classify' }, (thread) => classifyThread(thread))
  .step({ slug: 'deliverSlack', dependsOn: ['classify'] }, async (input, ctx) => {
    if (input.classify.label !== 'urgent') return { posted: false, text: null };
    return await postToSlack(
      `Urgent thread ${ctx.flowInput.id}: ${ctx.flowInput.title}`,
      ctx.signal,
    );
  });

/**
 * Version 1 of `communityThreads`: classify, then alert.
 *
 * @example
 * ```ts
 * import { createClient } from 'switchyard/client.ts';
 * import { registry } from '../registry.ts';
 *
 * // Callers start the alias; the run keeps the concrete slug of the active version.
 * const client = createClient(registry);
 * await client.start('communityThreads', { id: 't1', title: 'Outage', body: '…' });
 * await client.close();
 * ```
 */
export const communityThreadsV1 = defineDeployedFlow(
  routeFlow(v1, {
    queues: { classify: 'classify_threads', deliverSlack: 'deliver_slack_alerts' },
  }),
  { alias: 'communityThreads' },
);

const v2 = new Flow<Thread>({ slug: 'communityThreadsV2', maxAttempts: 3, baseDelay: 1 })
  .step({ slug: 'classify' }, (thread) => classifyThread(thread))
  .step({ slug: 'score', dependsOn: ['classify'] }, (input, ctx) => ({
    // Longer urgent threads first: a priority from 1 (low) to 3 (high).
    priority: input.classify.label === 'urgent' ? (ctx.flowInput.body.length > 80 ? 3 : 2) : 1,
  }))
  .step({ slug: 'deliverSlack', dependsOn: ['classify', 'score'] }, async (input, ctx) => {
    if (input.score.priority < 2) return { posted: false, text: null };
    return await postToSlack(
      `[P${input.score.priority}] ${ctx.flowInput.title} (thread ${ctx.flowInput.id})`,
      ctx.signal,
    );
  });

/**
 * Version 2 of `communityThreads`: adds a priority score before alerting. Listed after v1 in
 * the registry, it becomes the alias target while v1 runs drain.
 *
 * @example
 * ```ts
 * import { communityThreadsV1, communityThreadsV2 } from './community_threads.ts';
 *
 * const registry = [communityThreadsV1, communityThreadsV2] as const;
 * ```
 */
export const communityThreadsV2 = defineDeployedFlow(
  routeFlow(v2, {
    queues: {
      classify: 'classify_threads',
      score: 'classify_threads',
      deliverSlack: 'deliver_slack_alerts',
    },
  }),
  { alias: 'communityThreads' },
);
