-- Refuses (22023) a start_flow whose start key arguments do not fit together
-- (docs/design/flow-control.md#start-keys): mode, ttl, delay and max_delay need a key; a key needs
-- a mode
-- and no run_id (each names the run); ttl is dedupe's, delay and max_delay debounce's, and a
-- debounce sets its own start, so it takes no start_at.
create or replace function switchyard._check_start_key(
  flow_or_alias text, run_id uuid, start_at timestamptz, key text, mode text, ttl int,
  delay int, max_delay int
)
returns void
language plpgsql
immutable
set search_path = ''
as $$
declare
  problem text;
  argument text;
  value text;
  hint text;
begin
  if key is null then
    select a.name, a.value into argument, value
      from (values (1, 'mode', mode), (2, 'ttl', ttl::text), (3, 'delay', delay::text),
                   (4, 'max_delay', max_delay::text)) as a(n, name, value)
     where a.value is not null order by a.n limit 1;
    if argument is null then
      return;
    end if;
    problem := 'key_required';
    hint := 'it applies to a start with a key: pass key too';
  elsif char_length(key) not between 1 and 200 then
    problem := 'key_length'; argument := 'key'; value := key;
    hint := 'use a key of 1 to 200 characters';
  elsif run_id is not null then
    problem := 'key_with_run_id'; argument := 'run_id'; value := run_id::text;
    hint := 'a key and a run id each name the run: pass one of them';
  elsif mode is null or mode not in ('singleton', 'dedupe', 'debounce') then
    problem := 'mode_unknown'; argument := 'mode'; value := mode;
    hint := 'use mode ''singleton'', ''dedupe'' or ''debounce'' with a key';
  elsif ttl is not null and mode <> 'dedupe' then
    problem := 'ttl_dedupe_only'; argument := 'ttl'; value := ttl::text;
    hint := 'ttl is how long a dedupe key is kept after its run ended: use it with mode ''dedupe''';
  elsif ttl not between 1 and 31536000 then
    problem := 'ttl_range'; argument := 'ttl'; value := ttl::text;
    hint := 'use a ttl of 1 to 31536000 seconds';
  elsif mode <> 'debounce' and (delay is not null or max_delay is not null) then
    problem := 'delay_debounce_only';
    argument := case when delay is not null then 'delay' else 'max_delay' end;
    value := coalesce(delay, max_delay)::text;
    hint := 'delay and max_delay are a debounce''s: use them with mode ''debounce''';
  elsif mode = 'debounce' and (delay is null or delay not between 1 and 31536000) then
    problem := 'delay_range'; argument := 'delay'; value := delay::text;
    hint := 'a debounce needs a delay of 1 to 31536000 seconds after the last start';
  elsif mode = 'debounce' and max_delay not between delay and 31536000 then
    problem := 'max_delay_range'; argument := 'max_delay'; value := max_delay::text;
    hint := format('use a max_delay from delay (%s) to 31536000 seconds', delay);
  elsif mode = 'debounce' and start_at is not null then
    problem := 'debounce_start_at'; argument := 'start_at'; value := start_at::text;
    hint := 'a debounce starts delay seconds after the last start: pass no start_at';
  else
    return;
  end if;
  perform switchyard._refuse('22023', problem, argument, value, format(
    'start_flow(%s): %s %s is invalid: %s',
    switchyard._clip(flow_or_alias), argument, switchyard._clip(value), hint));
end
$$;
