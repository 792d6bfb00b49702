-- Every option a shape can carry, with the value an absent key means (a wait or sleep step's
-- waitTimeout and onTimeout: only on such a step, which older runtimes never send).
create or replace function switchyard._canonical_shape(shape jsonb)
returns jsonb
language sql
immutable
set search_path = ''
as $$
  select case
    when jsonb_typeof(shape) is distinct from 'object'
      or jsonb_typeof(shape -> 'steps') is distinct from 'array'
      or jsonb_typeof(coalesce(shape -> 'options', '{}')) <> 'object' then shape
    else shape || jsonb_build_object(
      -- runTimeout (0.4.0) is absent when none, as the flow control options are; events
      -- (0.4.0) is absent when true (its default) or null.
      'options', ('{"maxAttempts": 3, "baseDelay": 1, "maxDelay": 86400, "timeout": 60}'::jsonb
                  || coalesce(shape -> 'options', '{}'))
                 - case when shape -> 'options' -> 'runTimeout' = 'null'::jsonb
                        then array['runTimeout'] else '{}'::text[] end
                 - case when shape -> 'options' -> 'events' in ('null'::jsonb, 'true'::jsonb)
                        then array['events'] else '{}'::text[] end
                 -- batch (docs/design/batching.md) is absent when none.
                 - case when shape -> 'options' -> 'batch' = 'null'::jsonb
                        then array['batch'] else '{}'::text[] end,
      'steps', coalesce((
        select jsonb_agg(case
                 when jsonb_typeof(s) = 'object'
                  and jsonb_typeof(coalesce(s -> 'options', '{}')) = 'object' then
                   '{"kind": "single", "dependsOn": []}'::jsonb || s || jsonb_build_object(
                     'options',
                     -- The flow control options (rateLimit, concurrency; 0.4.0) and a sleep's
                     -- sleepUntil are absent when none: a JSON null is their default,
                     -- canonically left out, so the shapes of earlier releases stay as they
                     -- were stored.
                     ('{"maxAttempts": null, "baseDelay": null, "maxDelay": null, "timeout": null,
                        "startDelay": 0, "if": null, "ifNot": null, "whenUnmet": "skip",
                        "whenExhausted": "fail"}'::jsonb
                      -- A wait or sleep step's own options (docs/design/waits.md).
                      || case when s ->> 'kind' in ('wait', 'sleep')
                              then '{"waitTimeout": null, "onTimeout": "fail"}'::jsonb
                              else '{}'::jsonb end
                      || coalesce(s -> 'options', '{}'))
                     - array(select k from unnest(array['rateLimit', 'concurrency', 'sleepUntil']) as k
                              where s -> 'options' -> k = 'null'::jsonb))
                 else s end
               order by o)
          from jsonb_array_elements(shape -> 'steps') with ordinality as e(s, o)), '[]'))
  end
$$;
