-- The generated private queue of one step (withStepQueues, docs/design/overview.md#layers):
-- lower(flow__step) when that is at most 47 characters, else lower(flow__<stepIndex>), else a
-- refusal (22023 private_queue_name_too_long). Never truncated or hashed.
create or replace function switchyard.step_queue_name(flow_slug text, step_slug text, step_index int)
returns text
language plpgsql
immutable
set search_path = ''
as $$
begin
  if length(flow_slug) + 2 + length(step_slug) <= 47 then
    return lower(flow_slug || '__' || step_slug);
  elsif length(flow_slug) + 2 + length(step_index::text) <= 47 then
    return lower(flow_slug || '__' || step_index::text);
  end if;
  perform switchyard._refuse('22023', 'private_queue_name_too_long', 'step_slug', step_slug, format(
    'no private queue name fits for step %s of flow %s: both %s and %s exceed 47 characters',
    switchyard._clip(step_slug), switchyard._clip(flow_slug),
    switchyard._clip(lower(flow_slug || '__' || step_slug)),
    switchyard._clip(lower(flow_slug || '__' || step_index::text))),
    context => jsonb_build_object('flow_slug', left(flow_slug, 200), 'step_index', step_index));
end
$$;
