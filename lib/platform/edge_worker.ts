/**
 * `EdgeWorker.start()`: a queue worker inside a Supabase Edge Function.
 *
 * The function serves HTTP. The first authorized request starts one worker through the same
 * implementation as `startWorker()` (docs/design/worker.md#worker-start-up start-up: compile,
 * coverage, pause and
 * enabled checks, registration); later requests report the running worker. The instance keeps
 * itself alive with `waitUntil(worker.done)` and stops the worker on `beforeunload`: handlers'
 * `ctx.signal` is aborted, tasks that finish within `shutdownGraceMs` complete, the rest are made
 * visible again with their attempt refunded, then the worker is marked stopped. When the worker
 * stops on its own (deprecated, paused, disabled, fatal), the next authorized request may start a
 * new one —
 * unless the function is paused or disabled, which answers 409 and starts nothing.
 *
 * Authorization: `Authorization: Bearer <token>`, where the token equals
 * `SUPABASE_SERVICE_ROLE_KEY`, one of the secret keys in `SUPABASE_SECRET_KEYS` (a JSON object
 * of `sb_secret_…` keys, set by Supabase on projects with the new API keys) or
 * `SWITCHYARD_WORKER_SECRET` (compared in constant time). Only an
 * explicit `SWITCHYARD_AUTH=disabled` (or `auth: 'disabled'`) turns the check off, for local
 * runs: on Supabase's hosted runtime (`SB_REGION` or `DENO_DEPLOYMENT_ID` is set, see
 * `hostedRuntimeSignal` of the platform adapter) it is refused with 500 `worker_config` and nothing starts.
 * A refused request gets exactly `{"error":"unauthorized"}`; why it was refused goes to the
 * function's own log. The Supabase gateway's own JWT check is turned off for queue functions
 * (`verify_jwt = false`, written by the scaffold) because the kit secret is not a JWT.
 *
 * Responses (all JSON):
 *
 * | status | body.error | when |
 * |---|---|---|
 * | 200 | – | `{ workerId, queueName, functionName, state: 'started' \| 'running' }` |
 * | 401 | `unauthorized` | bearer missing or wrong, or no secret configured (nothing else in the body) |
 * | 409 | `function_paused` | the function is paused: `reason` says why (cut at 1000 characters) |
 * | 409 | `function_disabled` | the function is disabled (a fenced rollout) |
 * | 409 | `coverage` | the registry lacks pairs that work on the queue needs: `missingPairs` |
 * | 500 | `worker_config` | the registry or options are wrong, or auth is disabled on the hosted runtime |
 * | 500 | `start_failed` | anything else (the database is unreachable, …) |
 * | 503 | `shutting_down` | the instance is unloading |
 *
 * A refused start (the 409s and 500s) is also logged by the function, `worker start refused
 * (<status> <error>): <message>`, and recorded in `switchyard.refusals` with the same text
 * (docs/design/worker.md#refusals-are-seen-where-operators-look): the caller on a hosted project is
 * the keep-alive's pg_net, whose
 * answers nobody reads.
 *
 * Tuning options that the code does not set can come from the environment:
 * `SWITCHYARD_MAX_CONCURRENT`, `SWITCHYARD_BATCH_SIZE`, `SWITCHYARD_VISIBILITY_TIMEOUT`,
 * `SWITCHYARD_MAX_POLL_SECONDS`, `SWITCHYARD_POLL_INTERVAL_MS`,
 * `SWITCHYARD_HEARTBEAT_INTERVAL_MS`, `SWITCHYARD_STALL_CHECK_INTERVAL_MS`,
 * `SWITCHYARD_HEARTBEAT_WINDOW_SECONDS`, `SWITCHYARD_SHUTDOWN_GRACE_MS` and
 * `SWITCHYARD_MAX_CONNECTIONS` (integers). The database is `connectionString`, else
 * `SWITCHYARD_DB_URL` (a secret you set, for example the transaction pooler's URL), else
 * `SUPABASE_DB_URL`, else `DATABASE_URL`.
 *
 * @module
 */
import type { AnyFlow } from '../dsl/flow.ts';
import type { QueueNamesOf, WorkerTarget } from '../dsl/placement.ts';
import { authProblem, disabledAuthRefusal, type EdgeAuth } from './auth.ts';
import { defaultPlatform, type Platform } from './platform.ts';
import type { StepQueuedFlow } from '../dsl/with_step_queues.ts';
import {
  type CommonWorkerOptions,
  consoleLogger,
  type PlainWorkerOptions,
  type QueueWorkerOptions,
  startWorkerImpl,
  type StepWorkerOptions,
  type Worker,
  workerFunctionName,
} from '../worker/worker.ts';
import { recordRefusal, refusalText, type StartRefusal, startRefusal } from '../worker/refusal.ts';

export type { EdgeAuth } from './auth.ts';

/**
 * Options `EdgeWorker.start()` adds to the worker options.
 *
 * @example
 * ```ts
 * import { createMemoryPlatform } from './platform.ts';
 * import type { EdgeOptions } from './edge_worker.ts';
 *
 * const options: EdgeOptions = { platform: createMemoryPlatform(), auth: 'disabled' };
 * ```
 */
export interface EdgeOptions {
  /** Runtime globals; default {@linkcode defaultPlatform}. */
  platform?: Platform;
  /** Request authorization; see {@linkcode EdgeAuth}. */
  auth?: EdgeAuth;
}

/**
 * What a request to the function reports about its worker.
 *
 * @example
 * ```ts
 * import type { EdgeWorkerStatus } from './edge_worker.ts';
 *
 * const status: EdgeWorkerStatus = {
 *   workerId: '5f0c…',
 *   queueName: 'classify_threads',
 *   functionName: 'classify-threads-worker',
 *   state: 'running',
 * };
 * ```
 */
export interface EdgeWorkerStatus {
  /** The worker's id (`switchyard.workers.worker_id`). */
  workerId: string;
  /** The physical queue it polls. */
  queueName: string;
  /** The function whose pause and enabled flags it obeys. */
  functionName: string;
  /** `started` by this request, or already `running`. */
  state: 'started' | 'running';
}

/**
 * The running function, as returned by `EdgeWorker.start()`.
 *
 * @example
 * ```ts
 * import { defineDeployedFlow, EdgeWorker, Flow, routeFlow } from '../mod.ts';
 * import { createMemoryPlatform } from './platform.ts';
 *
 * const flow = new Flow({ slug: 'pingV1' }).step({ slug: 'ping' }, () => 'pong');
 * const registry = [
 *   defineDeployedFlow(routeFlow(flow, { queues: { ping: 'pings' } }), { alias: 'ping' }),
 * ] as const;
 * const platform = createMemoryPlatform({ SWITCHYARD_AUTH: 'disabled' });
 * const fn = EdgeWorker.start(registry, { queueName: 'pings', platform });
 * console.log(fn.worker); // null until the first request
 * await fn.stop();
 * ```
 */
export interface EdgeWorkerHandle {
  /** The request handler given to the platform's `serve` (also callable directly). */
  readonly fetch: (request: Request) => Promise<Response>;
  /** The running worker, or `null` before the first authorized request and after it stopped. */
  readonly worker: Worker | null;
  /** Stops the worker (in-flight tasks finish) and the HTTP server; later requests get 503. */
  stop(): Promise<void>;
}

type EdgeImplOptions = CommonWorkerOptions & EdgeOptions & {
  queueName?: string;
  stepSlug?: string;
};

/**
 * Starts a queue function: registers its HTTP handler and starts the worker on the first
 * authorized request. Same targets and options as `startWorker()`, plus
 * {@linkcode EdgeOptions}.
 *
 * @example
 * ```ts
 * // What `deno task scaffold-queue classify_threads` writes to
 * // supabase/functions/classify-threads-worker/index.ts (there: `from 'switchyard'` and
 * // `from '../../_shared/registry.ts'`).
 * import { EdgeWorker } from '../mod.ts';
 * import { registry } from '../../supabase/functions/_shared/registry.ts';
 *
 * EdgeWorker.start(registry, { queueName: 'classify_threads', maxConcurrent: 4 });
 * ```
 */
export class EdgeWorker {
  private constructor() {}

  /**
   * Serves the function: a plain flow (`EdgeWorker.start(flow)`), a `withStepQueues()` flow
   * (`{ stepSlug }`) or a registry of deployments (`{ queueName }`, autocompleted from the
   * routed queues).
   *
   * @example
   * ```ts
   * import { EdgeWorker, Flow } from '../mod.ts';
   * import { createMemoryPlatform } from './platform.ts';
   *
   * const flow = new Flow<{ n: number }>({ slug: 'double' })
   *   .step({ slug: 'twice' }, (input) => input.n * 2);
   * const fn = EdgeWorker.start(flow, { platform: createMemoryPlatform() });
   * await fn.stop();
   * ```
   */
  static start(flow: AnyFlow, options?: PlainWorkerOptions & EdgeOptions): EdgeWorkerHandle;
  /**
   * Serves the function of one step queue of a `withStepQueues()` flow.
   *
   * @example
   * ```ts
   * import { EdgeWorker, Flow, withStepQueues } from '../mod.ts';
   *
   * const flow = new Flow({ slug: 'pages' }).step({ slug: 'fetch' }, () => 1);
   * EdgeWorker.start(withStepQueues(flow), { stepSlug: 'fetch' });
   * ```
   */
  static start<F extends AnyFlow>(
    flow: StepQueuedFlow<F>,
    options: StepWorkerOptions<F> & EdgeOptions,
  ): EdgeWorkerHandle;
  /**
   * Serves the function of one explicit queue for a registry of deployments; `queueName`
   * autocompletes from the routed queues.
   *
   * @example
   * ```ts
   * import { EdgeWorker } from '../mod.ts';
   * import { registry } from '../../supabase/functions/_shared/registry.ts';
   *
   * EdgeWorker.start(registry, { queueName: 'deliver_slack_alerts', maxConcurrent: 2 });
   * ```
   */
  static start<const R extends readonly WorkerTarget[]>(
    registry: R,
    options:
      & QueueWorkerOptions<QueueNamesOf<R> extends never ? string : QueueNamesOf<R>>
      & EdgeOptions,
  ): EdgeWorkerHandle;
  static start(
    target: WorkerTarget | readonly WorkerTarget[],
    options: EdgeImplOptions = {},
  ): EdgeWorkerHandle {
    return startEdgeWorker(target, options);
  }
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  });
}

function errorResponse(refusal: StartRefusal): Response {
  return json(refusal.status, refusal.body);
}

function startEdgeWorker(
  target: WorkerTarget | readonly WorkerTarget[],
  options: EdgeImplOptions,
): EdgeWorkerHandle {
  const { platform = defaultPlatform(), auth, ...workerOptions } = options;
  const log = workerOptions.logger ?? consoleLogger('[switchyard]');
  let current: Worker | null = null;
  let starting: Promise<Worker> | null = null;
  let unloading = false;
  let authRefusalRecorded = false;

  const start = async (): Promise<Worker> => {
    // Settings and the database URL the code does not set come from the function's environment.
    const worker = await startWorkerImpl(target, { ...workerOptions, env: platform.env });
    current = worker;
    // Forget the worker once it stops, whatever the reason, so a later request may start anew.
    const settled = worker.done.then(() => {}, () => {}).then(() => {
      if (current === worker) current = null;
    });
    platform.waitUntil(settled);
    return worker;
  };

  const status = (worker: Worker, state: EdgeWorkerStatus['state']) =>
    json(
      200,
      {
        workerId: worker.workerId,
        queueName: worker.queueName,
        functionName: worker.functionName,
        state,
      } satisfies EdgeWorkerStatus,
    );

  const fetch = async (request: Request): Promise<Response> => {
    if (unloading) {
      return json(503, { error: 'shutting_down', message: 'the function instance is unloading' });
    }
    const refusal = disabledAuthRefusal(auth, platform.env);
    if (refusal !== null) {
      log.error(refusal);
      // Recorded once per instance: every request, authorized or not, meets this refusal.
      if (!authRefusalRecorded) {
        authRefusalRecorded = true;
        const functionName = workerFunctionName(target, workerOptions);
        if (functionName !== null) {
          await recordRefusal(functionName, 'worker_config', refusal, {
            connectionString: workerOptions.connectionString,
            env: platform.env,
            log,
          });
        }
      }
      return json(500, { error: 'worker_config', message: refusal });
    }
    const problem = await authProblem(request, auth, platform.env);
    if (problem !== null) {
      // Nothing about the configuration leaves in the answer; the function's log says why.
      log.warn(`unauthorized request: ${problem}`);
      return json(401, { error: 'unauthorized' }, { 'www-authenticate': 'Bearer' });
    }
    if (current) return status(current, 'running');
    let mine = false;
    if (!starting) {
      mine = true;
      starting = start().finally(() => (starting = null));
    }
    try {
      const worker = await starting;
      return status(worker, mine ? 'started' : 'running');
    } catch (e) {
      // The answer goes to the caller — on a hosted project the keep-alive's pg_net, which
      // nobody reads — so the function's own log says the same, as does the row the start
      // recorded in switchyard.refusals
      // (docs/design/worker.md#refusals-are-seen-where-operators-look).
      const refusal = startRefusal(e);
      log.error(
        `worker start refused (${refusal.status} ${refusal.error}): ${refusalText(refusal)}`,
      );
      return errorResponse(refusal);
    }
  };

  const server = platform.serve(fetch);
  let stopped: Promise<void> | undefined;
  const stop = () => {
    stopped ??= (async () => {
      unloading = true;
      await starting?.catch(() => {});
      await current?.stop();
    })();
    return stopped;
  };
  platform.onBeforeUnload(stop);

  return {
    fetch,
    get worker() {
      return current;
    },
    async stop() {
      await stop();
      await server.shutdown().catch(() => {});
    },
  };
}
