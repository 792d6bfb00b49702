-- The tick's part of batching (docs/design/batching.md): closes every open batch whose timeout
-- has passed by `now_at` (close_at <= now_at), oldest first, at most `max_batches`, each in a
-- subtransaction of its own; returns how many runs it started. A batch a writer holds (an event
-- joining it, in a transaction not yet committed) is skipped, never waited for: the next tick
-- closes it, with that event if it committed. A close that fails (the alias was deleted) keeps
-- the batch and its events, records the error (list_batches shows it) and is tried again next
-- tick. run_schedules calls it, so the keep-alive's and the scheduler's pg_cron jobs, `schedule
-- tick` and a test engine's rounds all close batches.
create or replace function switchyard.close_batches(
  now_at timestamptz default switchyard.clock_now(), max_batches int default 1000
)
returns int
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  b record;
  closed int := 0;
begin
  if now_at is null or not isfinite(now_at) then
    perform switchyard._refuse('22023', 'now_at_range', 'now_at', now_at::text,
      'close_batches: now_at must be a finite time');
  end if;
  if max_batches is null or max_batches not between 1 and 100000 then
    perform switchyard._refuse('22023', 'integer_range', 'max_batches', max_batches::text, format(
      'close_batches: max_batches %s is invalid: use an integer from 1 to 100000',
      coalesce(max_batches::text, 'null')), context => jsonb_build_object('min', 1, 'max', 100000));
  end if;
  for b in select x.batch_id, x.started_as, x.batch_key from switchyard.batches x
            where x.close_at <= now_at
            order by x.close_at, x.batch_id
            limit max_batches
              for update skip locked loop
    begin
      perform switchyard._close_batch(b.batch_id, 'timeout');
      closed := closed + 1;
    exception when others then
      if sqlstate like '40%' or sqlstate like '57%' then
        raise;
      end if;
      update switchyard.batches x set last_error = left(format('%s (SQLSTATE %s)', sqlerrm,
                                                               sqlstate), 1000)
       where x.batch_id = b.batch_id;
      raise warning 'switchyard.close_batches: batch % of %: % (SQLSTATE %); tried again next tick',
        to_json(b.batch_key)::text, to_json(b.started_as)::text, sqlerrm, sqlstate;
    end;
  end loop;
  return closed;
end
$$;
