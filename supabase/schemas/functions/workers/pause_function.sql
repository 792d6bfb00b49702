-- Pauses a queue function durably (docs/design/worker.md#worker-states-and-parts): its workers stop
-- taking work and
-- a new worker refuses to start until resume_function. The reason is required and kept.
create or replace function switchyard.pause_function(function_name text, reason text)
returns boolean
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  max_chars int := switchyard.limit_value('max_reason_chars');
begin
  if coalesce(trim(reason), '') = '' then
    perform switchyard._refuse('22023', 'reason_missing', 'reason', reason,
      'pause_function: a reason is required');
  end if;
  if char_length(reason) > max_chars then
    perform switchyard._refuse('22023', 'max_reason_chars', 'reason', reason, format(
      'pause_function(%s): the reason is %s characters long, over the limit of %s characters; '
      'say why in fewer words and keep the details elsewhere',
      switchyard._clip(pause_function.function_name), char_length(reason), max_chars),
      context => jsonb_build_object('size', char_length(reason), 'limit', max_chars));
  end if;
  update switchyard.worker_functions f
     set paused_at = switchyard.clock_now(), pause_reason = reason
   where f.function_name = pause_function.function_name and f.paused_at is null;
  if found then
    return true;
  end if;
  if not exists (select 1 from switchyard.worker_functions f where f.function_name = pause_function.function_name) then
    raise exception using errcode = 'SY003', message = format(
      'unknown function %s', switchyard._clip(pause_function.function_name)),
      detail = jsonb_build_object(
        'function_names', jsonb_build_array(left(pause_function.function_name, 200)))::text;
  end if;
  return false;      -- already paused: the first reason is kept
end
$$;
