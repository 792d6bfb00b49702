/**
 * The one registry of deployed flows, here with the example flow (`npx switchyard install
 * --example`). Every queue function imports it; list each deployment once, a new version of an
 * alias after the old one, and keep the `as const`. After a change: `npx switchyard compile`,
 * then `supabase db push` and redeploy the queue functions.
 *
 * @module
 */
import { greet } from './flows/greet.ts';

/** Every deployed flow, oldest version first within each alias. */
export const registry = [greet] as const;
