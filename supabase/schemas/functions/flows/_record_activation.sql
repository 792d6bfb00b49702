-- Records one activation of an alias (docs/design/versions.md): every move of its one active
-- concrete version is kept, with the version before it and what moved it.
create or replace function switchyard._record_activation(
  alias_name text, target text, previous text, source text
)
returns void
language sql
volatile
set search_path = ''
as $$
  insert into switchyard.aliases as a (alias, flow_slug, activated_at)
  values (alias_name, target, switchyard.clock_now())
  on conflict (alias) do update set flow_slug = excluded.flow_slug, activated_at = excluded.activated_at;
  insert into switchyard.alias_activations (alias, flow_slug, previous_flow_slug, source)
  values (alias_name, target, previous, source);
$$;
