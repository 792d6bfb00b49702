-- Registers queue function "FUNCTION_NAME" for queue "QUEUE_NAME" (written by
-- `npx switchyard scaffold-queue QUEUE_NAME`). The shared queue is provisioned first (created when
-- absent; a queue of the catalog is kept as it is), because register_function refuses a queue
-- the catalog does not know. A new function starts enabled and unpaused; an existing one keeps
-- its flags: this never re-enables a disabled or paused function.
select switchyard.ensure_shared_queue('QUEUE_NAME');
select switchyard.register_function('FUNCTION_NAME', 'QUEUE_NAME');
