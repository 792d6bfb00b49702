/**
 * The default heartbeat window, shared by the worker's settings and the operator calls
 * that count live workers (docs/design/versions.md: a live worker has not stopped, is not
 * deprecated and heart-beat within its window). A worker stores its own window at
 * registration; an operator call's window can only widen it: each worker is judged by the
 * larger of the two. The SQL functions default to the same value.
 *
 * @module
 */

/**
 * Seconds without a heartbeat after which a worker no longer counts as live (15): a worker's
 * default `heartbeatWindowSeconds`, and the operator calls' default window, which widens each
 * worker's own window and never narrows it.
 */
export const DEFAULT_HEARTBEAT_WINDOW_SECONDS = 15;
