/**
 * Signed webhooks (docs/design/ingestion.md#signed-webhooks): an Edge Function that receives HTTP
 * deliveries
 * from another service and starts a run of an alias for each one, exactly once per delivery.
 *
 * A delivery is answered in this order, each refusal a JSON `{ "error": <rule>, "message": … }`
 * that names the rule and starts nothing:
 *
 * 1. a method other than `POST`: 405 `method_not_allowed`;
 * 2. a body over `maxBodyBytes` (default 1 MiB): 413 `body_too_large`, from `Content-Length`
 *    when the sender gives one, else while reading: the body is read in chunks and the read
 *    stops at the limit, never buffering the whole of an oversized body;
 * 3. the signature header (default `webhook-signature`) missing, malformed or not matching:
 *    401 `signature_missing` / `signature_malformed` / `signature_mismatch`; its timestamp
 *    outside `toleranceSeconds` (default 300) of now: 401 `timestamp_outside_tolerance`;
 * 4. a body that is not JSON: 400 `body_not_json`;
 * 5. no delivery id (the first of `deliveryIdHeaders` present, default `webhook-id`, then
 *    `x-delivery-id`), or one that is not 1 to 200 characters: 400 `delivery_id_missing` /
 *    `delivery_id_invalid`.
 *
 * Two signature forms are accepted (HMAC-SHA256 with the shared secret, hex digests):
 * `t=<unix seconds>,v1=<hex>` signs `${t}.${body}` (several `v1=` entries may be given, as
 * while a secret is rotated: one matching is enough), and a plain `<hex>` (or `sha256=<hex>`)
 * signs the body alone (it carries no time, so only the delivery id protects against a replay).
 * Signatures are checked with `crypto.subtle.verify`, in constant time.
 *
 * A verified delivery starts its run in one transaction with the start key `delivery id` in
 * `dedupe` mode (docs/design/flow-control.md#start-keys): the answer is 202 `{ "runId": … }` for a
 * new run, and a delivery whose
 * id was seen before (a retry of the sender, a replay, ten copies at once) starts nothing and is
 * answered 200 `{ "runId": <the same run>, "duplicate": true }` while the key is kept (`ttl`,
 * default 7 days after the run ended).
 *
 * @module
 */
import type { SwitchyardError } from '../errors.ts';
import {
  connectionOrigin,
  type EnvReader,
  NO_CONNECTION_MESSAGE,
  openSql,
  resolveConnectionString,
  type Sql,
} from '../sql/connection.ts';
import { startRun } from '../sql/runs.ts';
import { sqlOf, type SqlSource } from '../sql/source.ts';
import { defaultPlatform, type Platform, type PlatformServer } from './platform.ts';

/** The default environment variable holding the shared secret. */
const WEBHOOK_SECRET_ENV_VAR = 'SWITCHYARD_WEBHOOK_SECRET';

/** The default body limit: 1 MiB. */
const WEBHOOK_MAX_BODY_BYTES = 1024 * 1024;

/** The default timestamp tolerance of the `t=` form, in seconds. */
const WEBHOOK_TOLERANCE_SECONDS = 300;

/**
 * The outcome of {@linkcode verifyWebhookSignature}: ok, or the rule broken and why.
 *
 * @example
 * ```ts
 * import type { SignatureCheck } from './webhook.ts';
 *
 * const check: SignatureCheck = { ok: false, rule: 'signature_missing', message: 'no header' };
 * ```
 */
export type SignatureCheck =
  | { ok: true; form: 'timestamped' | 'plain' }
  | {
    ok: false;
    /** Why it was refused: the `error` of the 401 answer. */
    rule:
      | 'signature_missing'
      | 'signature_malformed'
      | 'signature_mismatch'
      | 'timestamp_outside_tolerance';
    message: string;
  };

/**
 * What {@linkcode verifyWebhookSignature} checks.
 *
 * @example
 * ```ts
 * import type { VerifyOptions } from './webhook.ts';
 *
 * const options: VerifyOptions = { secret: 's', header: null, body: new Uint8Array() };
 * ```
 */
export interface VerifyOptions {
  /** The shared secret (its UTF-8 bytes are the HMAC key). */
  secret: string;
  /** The signature header's value, or null when absent. */
  header: string | null;
  /** The raw body, exactly as received. */
  body: Uint8Array;
  /** Seconds a `t=` timestamp may be away from now (default 300). */
  toleranceSeconds?: number;
  /** Now, in milliseconds (default `Date.now()`). */
  now?: number;
}

const encoder = new TextEncoder();

/** The hex digest as bytes, or null when it is not 64 hex digits. */
function hexBytes(hex: string): Uint8Array | null {
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) return null;
  const out = new Uint8Array(32);
  for (let i = 0; i < 32; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}

async function hmacKey(secret: string): Promise<CryptoKey> {
  return await crypto.subtle.importKey(
    'raw',
    encoder.encode(secret),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign', 'verify'],
  );
}

/**
 * The hex HMAC-SHA256 of `data` with `secret`: how a sender signs (tests, and senders of one's
 * own).
 *
 * @example
 * ```ts
 * import { hmacSha256Hex } from './webhook.ts';
 *
 * const body = '{"id":1}';
 * const t = Math.floor(Date.now() / 1000);
 * const header = `t=${t},v1=${await hmacSha256Hex('secret', `${t}.${body}`)}`;
 * console.log(header);
 * ```
 */
export async function hmacSha256Hex(secret: string, data: string | Uint8Array): Promise<string> {
  const bytes = typeof data === 'string' ? encoder.encode(data) : data;
  const mac = await crypto.subtle.sign('HMAC', await hmacKey(secret), bytes as BufferSource);
  return [...new Uint8Array(mac)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * Verifies a delivery's signature header against its raw body (see the module docs for the two
 * forms). Digests are compared by `crypto.subtle.verify`, in constant time.
 *
 * @example
 * ```ts
 * import { hmacSha256Hex, verifyWebhookSignature } from './webhook.ts';
 *
 * const body = new TextEncoder().encode('{"id":1}');
 * const header = await hmacSha256Hex('secret', body);
 * const check = await verifyWebhookSignature({ secret: 'secret', header, body });
 * console.assert(check.ok);
 * ```
 */
export async function verifyWebhookSignature(options: VerifyOptions): Promise<SignatureCheck> {
  const { secret, header, body } = options;
  const tolerance = options.toleranceSeconds ?? WEBHOOK_TOLERANCE_SECONDS;
  const now = options.now ?? Date.now();
  if (header === null || header.trim() === '') {
    return { ok: false, rule: 'signature_missing', message: 'the delivery carries no signature' };
  }
  const value = header.trim();
  const key = await hmacKey(secret);
  const verify = (digest: Uint8Array, data: Uint8Array) =>
    crypto.subtle.verify('HMAC', key, digest as BufferSource, data as BufferSource);
  if (/^[^=,]+=/.test(value) && !/^sha256=/i.test(value)) {
    // The timestamped form: t=<unix seconds>,v1=<hex>[,v1=<hex>…] (other schemes ignored).
    let t: string | null = null;
    const digests: Uint8Array[] = [];
    for (const part of value.split(',')) {
      const at = part.indexOf('=');
      const name = part.slice(0, at).trim();
      const item = part.slice(at + 1).trim();
      if (at < 0) {
        return malformed(`the signature part "${clip(part)}" is not name=value`);
      }
      if (name === 't') {
        if (t !== null || !/^\d{1,12}$/.test(item)) {
          return malformed(`the timestamp t=${clip(item)} is not one whole number of seconds`);
        }
        t = item;
      } else if (name === 'v1') {
        const digest = hexBytes(item);
        if (digest === null) {
          return malformed(`v1=${clip(item)} is not a hex HMAC-SHA256 (64 hex digits)`);
        }
        digests.push(digest);
      }
    }
    if (t === null || digests.length === 0) {
      return malformed('the timestamped form needs t=<unix seconds> and at least one v1=<hex>');
    }
    const skew = Math.abs(now / 1000 - Number(t));
    if (!(skew <= tolerance)) {
      return {
        ok: false,
        rule: 'timestamp_outside_tolerance',
        message: `the signature's timestamp t=${t} is ${
          Math.round(skew)
        } s from now: at most ${tolerance} s is accepted (a late or replayed delivery)`,
      };
    }
    const signed = new Uint8Array([...encoder.encode(`${t}.`), ...body]);
    for (const digest of digests) {
      if (await verify(digest, signed)) return { ok: true, form: 'timestamped' };
    }
    return mismatch();
  }
  const digest = hexBytes(value.replace(/^sha256=/i, ''));
  if (digest === null) {
    return malformed(
      'the signature is neither t=<unix seconds>,v1=<hex> nor a hex HMAC-SHA256 (64 hex digits)',
    );
  }
  return (await verify(digest, body)) ? { ok: true, form: 'plain' } : mismatch();
}

function clip(text: string): string {
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}

function malformed(message: string): SignatureCheck {
  return { ok: false, rule: 'signature_malformed', message };
}

function mismatch(): SignatureCheck {
  return {
    ok: false,
    rule: 'signature_mismatch',
    message: 'the signature does not match the body with the shared secret',
  };
}

/**
 * Options of {@linkcode createWebhook} and {@linkcode serveWebhook}.
 *
 * @example
 * ```ts
 * import type { WebhookOptions } from './webhook.ts';
 *
 * const options: WebhookOptions = { alias: 'orders', secretEnv: 'ORDERS_WEBHOOK_SECRET' };
 * ```
 */
export interface WebhookOptions {
  /** The alias (or flow slug) each delivery starts a run of. */
  alias: string;
  /**
   * The Edge Function's name, recorded in each run's origin (`{ kind: 'webhook', function,
   * delivery }`, docs/design/origins.md); `scaffold-webhook` writes it. Default: the request
   * path's function segment (`/functions/v1/<name>` or `/<name>`), else the alias.
   */
  name?: string;
  /** The shared secret; default the value of `secretEnv`. */
  secret?: string;
  /** The variable holding the shared secret (default `SWITCHYARD_WEBHOOK_SECRET`). */
  secretEnv?: string;
  /** The header holding the signature (default `webhook-signature`). */
  signatureHeader?: string;
  /** Headers holding the delivery id, the first present wins (default `webhook-id`, `x-delivery-id`). */
  deliveryIdHeaders?: readonly string[];
  /** Seconds a `t=` timestamp may be away from now (default 300). */
  toleranceSeconds?: number;
  /** The largest body accepted, in bytes (default 1 MiB). */
  maxBodyBytes?: number;
  /** Seconds a delivery id is kept after its run ended: 1 to 31536000, default 604800 (7 days). */
  ttl?: number;
  /** The run's input from the parsed body (default the body itself). */
  input?: (body: unknown, delivery: { id: string; headers: Headers }) => unknown;
  /** The database (default a pool on `connectionString`, else the environment's URL). */
  source?: SqlSource;
  /** The database URL when no `source` is given. */
  connectionString?: string;
  /** Reads the environment (default the platform's). */
  env?: EnvReader;
  /** Now, in milliseconds (tests). */
  now?: () => number;
  /** Where refusals and failures are logged (default `console`). */
  logger?: { warn(message: string): void; error(message: string): void };
}

/**
 * The webhook's request handler.
 *
 * @example
 * ```ts
 * import { createWebhook } from './webhook.ts';
 *
 * const webhook = createWebhook({ alias: 'orders' });
 * const server = Deno.serve({ port: 0 }, (request) => webhook.fetch(request));
 * await server.shutdown();
 * await webhook.close();
 * ```
 */
export interface Webhook {
  /** Answers one delivery (see the module docs). */
  fetch(request: Request): Promise<Response>;
  /** Ends the pool the webhook opened (not a `source` it was given). */
  close(): Promise<void>;
}

function answer(status: number, body: Record<string, unknown>): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json' },
  });
}

function refuse(status: number, rule: string, message: string): Response {
  return answer(status, { error: rule, message });
}

/** The function's name from the request's path (`/functions/v1/<name>/…` or `/<name>/…`). */
function functionOf(request: Request, fallback: string): string {
  const parts = new URL(request.url).pathname.split('/').filter((p) => p !== '');
  const name = parts[0] === 'functions' && parts[1] === 'v1' ? parts[2] : parts[0];
  return name && name.length <= 200 ? name : fallback;
}

/** The body, read a chunk at a time up to `limit` bytes; null when it is longer. */
async function boundedBody(request: Request, limit: number): Promise<Uint8Array | null> {
  if (request.body === null) return new Uint8Array();
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.byteLength;
  }
  return out;
}

function positiveInteger(
  name: string,
  value: number | undefined,
  fallback: number,
  max = Number.MAX_SAFE_INTEGER,
): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < 1 || value > max) {
    throw new TypeError(
      `webhook option ${name} ${value} is invalid: pass a whole number from 1 to ${max}`,
    );
  }
  return value;
}

/**
 * The webhook's handler (see the module docs): mount it in an Edge Function of one's own, or
 * use {@linkcode serveWebhook}. Options are checked at once (a TypeError naming the value); the
 * secret and the database are read at the first delivery, which is answered 500
 * `webhook_config` (naming what is missing, never a value) without them.
 *
 * @example
 * ```ts
 * import { createWebhook } from './webhook.ts';
 *
 * const webhook = createWebhook({ alias: 'orders', secretEnv: 'ORDERS_WEBHOOK_SECRET' });
 * Deno.serve((request) => webhook.fetch(request));
 * ```
 */
export function createWebhook(options: WebhookOptions): Webhook {
  const { alias } = options;
  if (typeof alias !== 'string' || alias === '') {
    throw new TypeError(`webhook option alias ${JSON.stringify(alias)} is invalid: name an alias`);
  }
  const secretEnv = options.secretEnv ?? WEBHOOK_SECRET_ENV_VAR;
  const signatureHeader = options.signatureHeader ?? 'webhook-signature';
  const idHeaders = options.deliveryIdHeaders ?? ['webhook-id', 'x-delivery-id'];
  if (idHeaders.length === 0) {
    throw new TypeError('webhook option deliveryIdHeaders is empty: name at least one header');
  }
  const tolerance = positiveInteger(
    'toleranceSeconds',
    options.toleranceSeconds,
    WEBHOOK_TOLERANCE_SECONDS,
  );
  const maxBody = positiveInteger('maxBodyBytes', options.maxBodyBytes, WEBHOOK_MAX_BODY_BYTES);
  const ttl = positiveInteger('ttl', options.ttl, 7 * 86400, 31536000);
  const env: EnvReader = options.env ?? ((name) => {
    try {
      return Deno.env.get(name);
    } catch {
      return undefined;
    }
  });
  const now = options.now ?? Date.now;
  const logger = options.logger ?? console;
  let opened: Sql | null = null;

  const database = (): Sql | string => {
    if (options.source) return sqlOf(options.source);
    if (opened) return opened;
    const url = resolveConnectionString(options.connectionString, env);
    if (!url) return NO_CONNECTION_MESSAGE;
    opened = openSql(url, {
      max: 4,
      applicationName: `switchyard webhook ${alias}`,
      origin: connectionOrigin(options.connectionString, env),
    });
    return opened;
  };

  const handle = async (request: Request): Promise<Response> => {
    if (request.method !== 'POST') {
      await request.body?.cancel().catch(() => {});
      return new Response(
        JSON.stringify({
          error: 'method_not_allowed',
          message: `method ${request.method} is not accepted: deliveries are POST`,
        }),
        { status: 405, headers: { 'content-type': 'application/json', allow: 'POST' } },
      );
    }
    const secret = options.secret ?? env(secretEnv);
    if (!secret) {
      logger.error(`webhook ${alias}: no shared secret: set ${secretEnv}`);
      return refuse(500, 'webhook_config', `the webhook has no shared secret: set ${secretEnv}`);
    }
    const tooLarge = () =>
      refuse(413, 'body_too_large', `the body is over ${maxBody} bytes, the webhook's limit`);
    const length = request.headers.get('content-length');
    if (length !== null && /^\d+$/.test(length) && Number(length) > maxBody) {
      await request.body?.cancel().catch(() => {});
      return tooLarge();
    }
    const body = await boundedBody(request, maxBody);
    if (body === null) return tooLarge();
    const check = await verifyWebhookSignature({
      secret,
      header: request.headers.get(signatureHeader),
      body,
      toleranceSeconds: tolerance,
      now: now(),
    });
    if (!check.ok) {
      logger.warn(`webhook ${alias}: refused a delivery (${check.rule}): ${check.message}`);
      return refuse(401, check.rule, `${check.message} (header ${signatureHeader})`);
    }
    let payload: unknown;
    try {
      payload = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(body));
    } catch (e) {
      return refuse(400, 'body_not_json', `the body is not JSON: ${(e as Error).message}`);
    }
    const name = idHeaders.find((h) => request.headers.get(h) !== null);
    const id = name === undefined ? null : request.headers.get(name)!;
    if (id === null) {
      return refuse(
        400,
        'delivery_id_missing',
        `the delivery has no id: send one in ${idHeaders.join(' or ')} (it dedupes retries)`,
      );
    }
    if (id.length < 1 || id.length > 200) {
      return refuse(
        400,
        'delivery_id_invalid',
        `the delivery id in ${name} has ${id.length} characters: 1 to 200 are accepted`,
      );
    }
    const sql = database();
    if (typeof sql === 'string') {
      logger.error(`webhook ${alias}: ${sql}`);
      return refuse(500, 'webhook_config', 'the webhook has no database configured');
    }
    let input: unknown;
    try {
      input = options.input ? options.input(payload, { id, headers: request.headers }) : payload;
    } catch (e) {
      return refuse(400, 'input_refused', `the body is not a valid input: ${(e as Error).message}`);
    }
    try {
      const { runId, fresh } = await sql.begin(async (tx) => {
        const runId = await startRun(tx as unknown as Sql, alias, input, {
          key: id,
          mode: 'dedupe',
          ttl,
          // Where the run came from (docs/design/origins.md).
          origin: {
            kind: 'webhook',
            function: options.name ?? functionOf(request, alias),
            delivery: id,
          },
        });
        // The key's row was written by this transaction exactly when it named a new run.
        const [row] = await tx<{ fresh: boolean }[]>`
          select k.xmin::text::bigint = pg_current_xact_id()::text::bigint % 4294967296 as fresh
            from switchyard.start_keys k where k.started_as = ${alias} and k.key = ${id}`;
        return { runId, fresh: row?.fresh === true };
      });
      return fresh ? answer(202, { runId }) : answer(200, { runId, duplicate: true });
    } catch (e) {
      const error = e as SwitchyardError;
      logger.error(`webhook ${alias}: the start failed: ${error.message}`);
      return refuse(500, 'start_failed', `the run could not be started: ${error.message}`);
    }
  };

  return {
    fetch: handle,
    async close() {
      const sql = opened;
      opened = null;
      await sql?.end({ timeout: 5 });
    },
  };
}

/**
 * Serves {@linkcode createWebhook}'s handler as the Edge Function's handler (what a scaffolded
 * webhook function's index.ts calls): the platform's `serve`, and its environment for the
 * secret and the database.
 *
 * @example
 * ```ts
 * import { serveWebhook } from './webhook.ts';
 *
 * serveWebhook({ alias: 'orders', secretEnv: 'ORDERS_WEBHOOK_SECRET' });
 * ```
 */
export function serveWebhook(
  options: WebhookOptions & { platform?: Platform },
): PlatformServer {
  const platform = options.platform ?? defaultPlatform();
  const webhook = createWebhook({ env: (name) => platform.env(name), ...options });
  const server = platform.serve((request) => webhook.fetch(request));
  platform.onBeforeUnload(() => webhook.close());
  return server;
}
