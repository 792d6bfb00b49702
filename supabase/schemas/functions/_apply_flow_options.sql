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
begin
  update switchyard.flows f
     set max_attempts = switchyard._int_option(canonical -> 'options', 'maxAttempts', what, 1, 1000, false),
         base_delay = switchyard._int_option(canonical -> 'options', 'baseDelay', what, 0, 86400, false),
         max_delay = coalesce(switchyard._int_option(canonical -> 'options', 'maxDelay', what, 0, 604800, true), 86400),
         timeout = switchyard._int_option(canonical -> 'options', 'timeout', what, 1, 86400, false)
   where f.flow_slug = slug;
  for step in select value from jsonb_array_elements(canonical -> 'steps') loop
    step_what := format('step %s option', to_json(step ->> 'slug'));
    update switchyard.steps st
       set max_attempts = switchyard._int_option(step -> 'options', 'maxAttempts', step_what, 1, 1000, true),
           base_delay = switchyard._int_option(step -> 'options', 'baseDelay', step_what, 0, 86400, true),
           max_delay = switchyard._int_option(step -> 'options', 'maxDelay', step_what, 0, 604800, true),
           timeout = switchyard._int_option(step -> 'options', 'timeout', step_what, 1, 86400, true),
           start_delay = coalesce(switchyard._int_option(step -> 'options', 'startDelay', step_what, 0, 86400, true), 0)
     where st.flow_slug = slug and st.step_slug = step ->> 'slug';
  end loop;
end
$$;
