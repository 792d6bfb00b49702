-- Makes a compiled concrete version the active target of an alias (docs/design/versions.md):
-- the operator's explicit move, recorded as an activation. Refuses an unknown or uncompiled
-- target and a name that differs from an existing alias only in case.
create or replace function switchyard.activate_alias(alias_name text, target_flow text)
returns void
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  previous text;
  other_alias text;
begin
  perform switchyard.assert_slug('alias', alias_name);
  perform switchyard._assert_alias_case(alias_name);
  if not exists (select 1 from switchyard.flows f where f.flow_slug = target_flow) then
    perform switchyard._refuse('22023', 'flow_not_compiled', 'target_flow', target_flow, format(
      'cannot activate alias %s: flow %s is not compiled', switchyard._clip(alias_name),
      switchyard._clip(target_flow)),
      context => jsonb_build_object('alias', alias_name));
  end if;
  select m.alias into other_alias from switchyard.alias_members m where m.flow_slug = target_flow;
  if other_alias is not null and other_alias <> alias_name then
    perform switchyard._refuse('23505', 'flow_in_other_alias', 'target_flow', target_flow, format(
      'cannot activate alias %s: flow %s belongs to alias %s',
      switchyard._clip(alias_name), switchyard._clip(target_flow), switchyard._clip(other_alias)),
      context => jsonb_build_object('alias', alias_name, 'other_alias', other_alias));
  end if;
  perform pg_advisory_xact_lock(hashtextextended('switchyard.alias:' || lower(alias_name), 0));
  perform switchyard._assert_alias_case(alias_name);   -- again: another spelling may have won
  insert into switchyard.alias_members (alias, flow_slug) values (alias_name, target_flow)
  on conflict do nothing;
  select a.flow_slug into previous from switchyard.aliases a where a.alias = alias_name for update;
  perform switchyard._record_activation(alias_name, target_flow, previous, 'operator');
end
$$;
