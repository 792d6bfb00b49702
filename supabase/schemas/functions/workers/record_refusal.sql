-- Records that a queue function's worker refused to start (the error of its HTTP answer:
-- function_paused, function_disabled, coverage, worker_config, start_failed) or paused on
-- unsupported work, with the message it logged
-- (docs/design/worker.md#refusals-are-seen-where-operators-look). One row per function
-- and kind: a repeat moves last_at, counts and keeps the latest message, cut at 2000 characters
-- (a record is never refused for its length). The worker calls it best effort.
create or replace function switchyard.record_refusal(function_name text, refusal text, message text)
returns void
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  max_name int := switchyard.limit_value('max_function_name_chars');
  kinds text[] := array['function_paused', 'function_disabled', 'coverage', 'worker_config',
                        'start_failed', 'unsupported_work'];
  text_ text;
begin
  if function_name is null or function_name !~ '^[a-z][a-z0-9_-]*$'
     or char_length(function_name) > max_name then
    perform switchyard._refuse('22023', 'function_name_format', 'function_name', function_name,
      format(
      'record_refusal: function name %s is invalid: use lower-case letters, digits, "-" and "_" '
      '(^[a-z][a-z0-9_-]*$), at most %s characters', switchyard._clip(function_name), max_name));
  end if;
  if refusal is null or not refusal = any (kinds) then
    perform switchyard._refuse('22023', 'refusal_unknown', 'refusal', refusal, format(
      'record_refusal: refusal %s is unknown: use %s', switchyard._clip(refusal),
      array_to_string(kinds, ', ')));
  end if;
  if coalesce(trim(message), '') = '' then
    perform switchyard._refuse('22023', 'message_missing', 'message', message,
      'record_refusal: a message is required');
  end if;
  text_ := case when char_length(message) <= 2000 then message
                else left(message, 2000) || format('... (%s characters)', char_length(message)) end;
  insert into switchyard.refusals as r (function_name, refusal, message)
  values (record_refusal.function_name, record_refusal.refusal, text_)
  on conflict on constraint refusals_pkey do update
     set message = excluded.message, last_at = switchyard.clock_now(), count = r.count + 1;
end
$$;
