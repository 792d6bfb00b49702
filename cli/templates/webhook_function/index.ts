/**
 * Signed webhook for alias "ALIAS_NAME", written by `npx switchyard scaffold-webhook`.
 *
 * Each POST delivery signed with the shared secret in SECRET_ENV_NAME (HMAC-SHA256, header
 * `webhook-signature`: `t=<unix>,v1=<hex>` or plain hex) starts one run of the alias, with the
 * JSON body as input; a delivery id seen before (`webhook-id` or `x-delivery-id`) starts nothing
 * and is answered with the same run id. See docs/design/ingestion.md#signed-webhooks for the
 * options
 * (`input` maps the body to the run's input).
 *
 * @module
 */
import { serveWebhook } from 'switchyard';

serveWebhook({ name: 'FUNCTION_NAME', alias: 'ALIAS_NAME', secretEnv: 'SECRET_ENV_NAME' });
