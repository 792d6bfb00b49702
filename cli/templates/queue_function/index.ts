/**
 * Queue function for "QUEUE_NAME", written by `npx switchyard scaffold-queue`.
 *
 * One worker polls this queue and runs every flow and version of the shared registry routed
 * to it. Edit `../_shared/registry.ts`, not this file.
 *
 * @module
 */
import { EdgeWorker } from 'switchyard';
import { registry } from '../../../supabase/functions/_shared/registry.ts';

EdgeWorker.start(registry, { queueName: QUEUE_NAME, maxConcurrent: MAX_CONCURRENT });

// scaffold-queue: template only. This file is the template of every queue function's index.ts;
// `npx switchyard scaffold-queue` drops this line and every line below it, writes the queue's name
// for "QUEUE_NAME" and QUEUE_NAME, its --max-concurrent for MAX_CONCURRENT and the shared
// registry's path relative to the function's directory. The declarations below only let the
// template type-check in place against the project's registry, whatever queues it routes.
declare const QUEUE_NAME: import('switchyard').QueueNamesOf<typeof registry>;
declare const MAX_CONCURRENT: number;
