-- Registers queue function "FUNCTION_NAME" for queue "QUEUE_NAME" (written by
-- `deno task scaffold-queue QUEUE_NAME`). A new function starts enabled and unpaused; an
-- existing one keeps its flags: this never re-enables a disabled or paused function.
select switchyard.register_function('FUNCTION_NAME', 'QUEUE_NAME');
