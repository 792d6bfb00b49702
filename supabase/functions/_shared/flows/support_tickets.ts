/**
 * Example flow: triage support tickets and escalate the ones a human must see now.
 *
 * A second flow on the same two shared queues as `communityThreads`: `triage` and `escalate`
 * run on `classify_threads`, the `notify` map on `deliver_slack_alerts`. One queue function
 * per queue serves both flows.
 *
 * @module
 */
import { defineDeployedFlow, Flow, routeFlow } from 'switchyard';
import { postToSlack } from './community_threads.ts';

/**
 * The input of a run: one support ticket.
 *
 * @example
 * ```ts
 * import type { Ticket } from './support_tickets.ts';
 *
 * const ticket: Ticket = { id: 'k1', customer: 'acme', plan: 'pro', subject: 'SSO setup' };
 * ```
 */
export interface Ticket {
  id: string;
  customer: string;
  plan: 'free' | 'pro' | 'enterprise';
  subject: string;
}

const v1 = new Flow<Ticket>({ slug: 'supportTicketsV1', maxAttempts: 3, baseDelay: 1 })
  .step({ slug: 'triage' }, (ticket) => ({
    severity: /\b(down|outage|data loss|breach)\b/i.test(ticket.subject)
      ? 'sev1' as const
      : ticket.plan === 'enterprise'
      ? 'sev2' as const
      : 'sev3' as const,
  }))
  // A condition, decided in SQL: sev3 tickets are not escalated, and with skip-cascade
  // nothing downstream of the escalation runs for them either.
  .step(
    {
      slug: 'escalate',
      dependsOn: ['triage'],
      ifNot: { triage: { severity: 'sev3' } },
      whenUnmet: 'skip-cascade',
    },
    (input, ctx) =>
      input.triage.severity === 'sev1'
        ? ['#support', '#oncall', `#customer-${ctx.flowInput.customer}`]
        : ['#support'],
  )
  // A map: one Slack delivery per channel, each retried on its own.
  .map({ slug: 'notify', array: 'escalate' }, async (channel, ctx) =>
    await postToSlack(
      `[${channel}] ticket ${ctx.flowInput.id} from ${ctx.flowInput.customer}: ` +
        ctx.flowInput.subject,
      ctx.signal,
    ));

/**
 * Version 1 of `supportTickets`: triage, escalate unless sev3 (a condition with
 * `skip-cascade`), then notify every escalation channel (a map step, one task per channel).
 *
 * @example
 * ```ts
 * import { createClient } from 'switchyard/client.ts';
 * import { registry } from '../registry.ts';
 *
 * const client = createClient(registry);
 * await client.start('supportTickets', {
 *   id: 'k1',
 *   customer: 'acme',
 *   plan: 'enterprise',
 *   subject: 'Site down after upgrade',
 * });
 * await client.close();
 * ```
 */
export const supportTicketsV1 = defineDeployedFlow(
  routeFlow(v1, {
    queues: {
      triage: 'classify_threads',
      escalate: 'classify_threads',
      notify: 'deliver_slack_alerts',
    },
  }),
  { alias: 'supportTickets' },
);
