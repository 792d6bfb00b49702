/**
 * The default heartbeat window, shared by the worker's settings and the operator calls
 * that count live workers (docs/ARCHITECTURE.md §6: a live worker has not stopped, is not
 * deprecated and heart-beat within the window). The SQL functions default to the same value.
 *
 * @module
 */

/** Seconds without a heartbeat after which a worker no longer counts as live (15). */
export const DEFAULT_HEARTBEAT_WINDOW_SECONDS = 15;
