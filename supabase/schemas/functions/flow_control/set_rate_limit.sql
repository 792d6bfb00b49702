-- Creates or changes a rate limit shared by name
-- (docs/design/flow-control.md#rate-limits-and-keyed-concurrency): rate tokens per
-- per_seconds, at most burst (default: rate) saved up. Live: the next claim uses it. A changed
-- limit keeps the tokens it had (refilled at the old rate up to now), at most the new burst; a
-- new one starts full. It also lifts a RetryAfter's drain (fail_task_with): the bucket refills
-- from now at the new rate, so the operator's word is the latest. Returns the limit as JSON.
create or replace function switchyard.set_rate_limit(
  name text, rate int, per_seconds int default 1, burst int default null
)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  cap int := coalesce(burst, rate);
  result jsonb;
begin
  if name is null or name !~ '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$' then
    perform switchyard._refuse('22023', 'rate_limit_name', 'name', name, format(
      'set_rate_limit: name %s is invalid: use a letter or digit, then letters, digits, _ . : '
      'or - (at most 100)', coalesce(to_json(left(name, 200))::text, 'null')));
  end if;
  if rate is null or rate not between 1 and 1000000 then
    perform switchyard._refuse('22023', 'integer_range', 'rate', rate::text, format(
      'set_rate_limit: rate %s is out of range: use 1 to 1000000 tokens per period',
      coalesce(rate::text, 'null')),
      context => jsonb_build_object('min', 1, 'max', 1000000));
  end if;
  if per_seconds is null or per_seconds not between 1 and 86400 then
    perform switchyard._refuse('22023', 'integer_range', 'per_seconds', per_seconds::text, format(
      'set_rate_limit: per_seconds %s is out of range: use 1 to 86400',
      coalesce(per_seconds::text, 'null')),
      context => jsonb_build_object('min', 1, 'max', 86400));
  end if;
  if cap not between 1 and 1000000 then
    perform switchyard._refuse('22023', 'integer_range', 'burst', cap::text, format(
      'set_rate_limit: burst %s is out of range: use 1 to 1000000', cap),
      context => jsonb_build_object('min', 1, 'max', 1000000));
  end if;
  insert into switchyard.rate_limits as l (name, rate, per_seconds, burst, tokens)
  values (set_rate_limit.name, set_rate_limit.rate, set_rate_limit.per_seconds, cap, cap)
  on conflict on constraint rate_limits_pkey do update
     set tokens = least(excluded.burst,
                        l.tokens + greatest(0, extract(epoch from switchyard.clock_now() - l.refilled_at))
                                   * l.rate::double precision / l.per_seconds),
         refilled_at = switchyard.clock_now(),
         rate = excluded.rate, per_seconds = excluded.per_seconds, burst = excluded.burst,
         updated_at = switchyard.clock_now()
  returning jsonb_build_object('name', l.name, 'rate', l.rate, 'per_seconds', l.per_seconds,
                               'burst', l.burst, 'tokens', l.tokens)
    into result;
  return result;
end
$$;
