/**
 * The example flow, written by `npx switchyard install --example`: two steps on the explicit queue
 * `greetings` (served by the queue function `greetings-worker`), started by its alias `greet`.
 *
 * A concrete flow never changes once deployed: to change its steps, add `greetV2` after it in
 * the registry (the alias moves to the last one listed).
 *
 * @module
 */
import { defineDeployedFlow, Flow, routeFlow } from 'switchyard';

const greetV1 = new Flow<{ name: string }>({ slug: 'greetV1' })
  .step({ slug: 'compose' }, (input) => ({ text: `Hello, ${input.name}!` }))
  .step({ slug: 'deliver', dependsOn: ['compose'] }, (input) => input.compose.text.length);

/** `greetV1` on the queue `greetings`, started as `greet`. */
export const greet = defineDeployedFlow(
  routeFlow(greetV1, { queues: { compose: 'greetings', deliver: 'greetings' } }),
  { alias: 'greet' },
);
