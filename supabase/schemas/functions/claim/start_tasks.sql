-- The claim (docs/design/claim.md#start_tasks): turns the messages a worker read into started
-- tasks, all or nothing per batch; the rules and their order are claim_batch's, which this calls
-- without the read's vt, so each claimed message's visibility is checked by _keep_hidden. The call
-- every earlier worker makes (0.4.0's among them) and the one the tests and tools use.
create or replace function switchyard.start_tasks(
  queue_name text, message_ids bigint[], worker_id uuid, supported_pairs text[] default null
)
returns setof switchyard.task_claim
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  return query select * from switchyard.claim_batch(
    start_tasks.queue_name, start_tasks.message_ids, start_tasks.worker_id,
    start_tasks.supported_pairs, null::timestamptz);
end
$$;
