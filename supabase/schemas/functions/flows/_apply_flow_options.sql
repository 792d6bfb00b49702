-- Sets a compiled flow's runtime options (flows and steps rows) from a canonical shape, with
-- the ranges ensure_flow has always checked. Tasks created afterwards copy them.
create or replace function switchyard._apply_flow_options(slug text, canonical jsonb)
returns void
language plpgsql
volatile
set search_path = ''
as $$
declare
  what text := format('flow %s option', to_json(slug));
  step jsonb;
  step_what text;
  rate jsonb;
  conc jsonb;
begin
  perform switchyard._check_batch_option(slug, canonical);
  update switchyard.flows f
     set max_attempts = switchyard._int_option(canonical -> 'options', 'maxAttempts', what, 1, 1000, false),
         base_delay = switchyard._int_option(canonical -> 'options', 'baseDelay', what, 0, 86400, false),
         max_delay = coalesce(switchyard._int_option(canonical -> 'options', 'maxDelay', what, 0, 604800, true), 86400),
         timeout = switchyard._int_option(canonical -> 'options', 'timeout', what, 1, 86400, false),
         run_timeout = switchyard._int_option(canonical -> 'options', 'runTimeout', what, 1, 31536000, true),
         events = switchyard._bool_option(canonical -> 'options', 'events', what, true)
   where f.flow_slug = slug;
  for step in select value from jsonb_array_elements(canonical -> 'steps') loop
    step_what := format('step %s option', to_json(step ->> 'slug'));
    -- Flow control (docs/design/flow-control.md#rate-limits-and-keyed-concurrency): JSON null means
    -- none.
    rate := nullif(step -> 'options' -> 'rateLimit', 'null'::jsonb);
    if rate is not null and (jsonb_typeof(rate) <> 'object'
        or jsonb_typeof(rate -> 'name') is distinct from 'string'
        or (rate ->> 'name') !~ '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$'
        or (rate - array['name', 'cost']) <> '{}'::jsonb) then
      perform switchyard._refuse('22023', 'rate_limit_invalid', 'rateLimit', rate::text, format(
        'flow %s %s rateLimit %s is invalid: use {"name": ..., "cost": 1} with a name of a '
        'letter or digit, then letters, digits, _ . : or - (at most 100)',
        to_json(slug)::text, step_what, left(rate::text, 200)),
        context => jsonb_build_object('flow_slug', slug, 'step_slug', step ->> 'slug'));
    end if;
    conc := nullif(step -> 'options' -> 'concurrency', 'null'::jsonb);
    if conc is not null and (jsonb_typeof(conc) <> 'object'
        or jsonb_typeof(conc -> 'key') is distinct from 'array'
        or jsonb_array_length(conc -> 'key') not between 1 and 8
        or exists (select 1 from jsonb_array_elements(conc -> 'key') k
                    where jsonb_typeof(k) <> 'string' or k #>> '{}' = '')
        or coalesce(conc ->> 'input', 'run') not in ('run', 'step')
        or (conc - array['key', 'input', 'limit']) <> '{}'::jsonb) then
      perform switchyard._refuse('22023', 'concurrency_invalid', 'concurrency', conc::text, format(
        'flow %s %s concurrency %s is invalid: use {"key": [1 to 8 keys], "input": "run" or '
        '"step", "limit": 1 to 10000}', to_json(slug)::text, step_what, left(conc::text, 200)),
        context => jsonb_build_object('flow_slug', slug, 'step_slug', step ->> 'slug'));
    end if;
    update switchyard.steps st
       set max_attempts = switchyard._int_option(step -> 'options', 'maxAttempts', step_what, 1, 1000, true),
           base_delay = switchyard._int_option(step -> 'options', 'baseDelay', step_what, 0, 86400, true),
           max_delay = switchyard._int_option(step -> 'options', 'maxDelay', step_what, 0, 604800, true),
           timeout = switchyard._int_option(step -> 'options', 'timeout', step_what, 1, 86400, true),
           start_delay = coalesce(switchyard._int_option(step -> 'options', 'startDelay', step_what, 0, 86400, true), 0),
           rate_limit = rate ->> 'name',
           rate_cost = coalesce(switchyard._int_option(rate, 'cost', step_what || ' rateLimit', 1, 1000, true), 1),
           concurrency_path = case when conc is not null then
             array(select k #>> '{}' from jsonb_array_elements(conc -> 'key') with ordinality e(k, o) order by o) end,
           concurrency_input = coalesce(conc ->> 'input', 'run'),
           concurrency_limit = switchyard._int_option(conc, 'limit', step_what || ' concurrency', 1, 10000, conc is null)
     where st.flow_slug = slug and st.step_slug = step ->> 'slug';
  end loop;
end
$$;
