-- Moves the messages that paused a queue function (an unsupported batch,
-- docs/design/claim.md#the-unsupported-batch) and have no task out of its queue into
-- switchyard.quarantined_messages, with their
-- bodies; resumes the function when none of them had a task. Returns what it moved, what had a
-- task and what was already gone.
create or replace function switchyard.quarantine_messages(function_name text)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  fn switchyard.worker_functions;
  queue text;
  named bigint[];
  moved bigint[];
  with_task jsonb;
  present bigint[];
  gone bigint[];
begin
  select * into fn from switchyard.worker_functions f
   where f.function_name = quarantine_messages.function_name for update;
  if not found then
    raise exception using errcode = 'SY003', message = format(
      'quarantine: unknown function %s', switchyard._clip(quarantine_messages.function_name)),
      detail = jsonb_build_object(
        'function_names', jsonb_build_array(left(quarantine_messages.function_name, 200)))::text;
  end if;
  if fn.paused_at is null then
    perform switchyard._refuse('55000', 'function_not_paused', 'function_name', fn.function_name,
      format(
      'quarantine: function %s is not paused: nothing to quarantine', switchyard._clip(fn.function_name)));
  end if;
  if fn.pause_detail is null or jsonb_typeof(fn.pause_detail -> 'message_ids') is distinct from 'array' then
    perform switchyard._refuse('55000', 'pause_names_no_messages', 'function_name',
      fn.function_name, format(
      'quarantine: function %s was paused by an operator (%s), naming no messages: resume it with deno task resume',
      switchyard._clip(fn.function_name), left(fn.pause_reason, 200)),
      context => jsonb_build_object('reason', fn.pause_reason));
  end if;
  queue := fn.pause_detail ->> 'queue';
  select coalesce(array_agg(distinct (e #>> '{}')::bigint), '{}') into named
    from jsonb_array_elements(fn.pause_detail -> 'message_ids') e;

  -- Named messages that belong to a task: left alone.
  select coalesce(jsonb_agg(jsonb_build_object('message_id', t.message_id::text,
                                               'pair', t.flow_slug || '/' || t.step_slug)
                            order by t.message_id), '[]')
    into with_task
    from switchyard.step_tasks t
   where t.queue_name = queue and t.message_id = any (named);

  -- The rest, while still in the queue: locked, copied with their bodies, then deleted.
  execute format(
    'with foreign_rows as (
       select m.msg_id, m.read_ct, m.enqueued_at, m.message, m.headers from pgmq.%I m
        where m.msg_id = any ($1)
          and not exists (select 1 from switchyard.step_tasks t
                           where t.queue_name = $2 and t.message_id = m.msg_id)
        order by m.msg_id
          for update of m
     ), kept as (
       insert into switchyard.quarantined_messages
         (queue_name, msg_id, read_ct, enqueued_at, message, headers, function_name, pause_reason)
       select $2, f.msg_id, f.read_ct, f.enqueued_at, f.message, f.headers, $3, $4
         from foreign_rows f
       returning msg_id
     )
     select coalesce(array_agg(k.msg_id order by k.msg_id), ''{}'') from kept k',
    pgmq.format_table_name(queue, 'q'))
    into moved
    using named, queue, fn.function_name, fn.pause_reason;
  if cardinality(moved) > 0 then
    perform pgmq.delete(queue, moved);
  end if;

  execute format('select coalesce(array_agg(m.msg_id), ''{}'') from pgmq.%I m where m.msg_id = any ($1)',
                 pgmq.format_table_name(queue, 'q'))
    into present using named;
  select coalesce(array_agg(n order by n), '{}') into gone
    from unnest(named) n
   where not (n = any (moved)) and not (n = any (present))
     and not exists (select 1 from switchyard.step_tasks t where t.queue_name = queue and t.message_id = n);

  if jsonb_array_length(with_task) = 0 then
    update switchyard.worker_functions f
       set paused_at = null, pause_reason = null, pause_detail = null
     where f.function_name = fn.function_name;
  end if;
  return jsonb_build_object(
    'function_name', fn.function_name,
    'queue', queue,
    'quarantined', (select coalesce(jsonb_agg(x::text order by x), '[]') from unnest(moved) x),
    'with_task', with_task,
    'gone', (select coalesce(jsonb_agg(x::text order by x), '[]') from unnest(gone) x),
    'resumed', jsonb_array_length(with_task) = 0);
end
$$;
