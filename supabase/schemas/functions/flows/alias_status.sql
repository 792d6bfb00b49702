-- Each alias with its active version and what the project's registry declares for it (the latest
-- compiled declaration, declare_alias; docs/design/versions.md, Declared aliases):
--   current     the active version is the declared target;
--   pending     it is not, and reason says why (a retired version's started runs, live workers
--               that lack the target, an operator's later activation) or who moves it next;
--   undeclared  no compiled migration declared it (migrations written before declarations, or a
--               registry no migration compiled): a worker's start-up moves it (sync_alias).
create or replace function switchyard.alias_status()
returns table (
  alias text, flow_slug text, declared_versions text[], declared_at timestamptz, state text,
  reason text
)
language plpgsql
stable
security definer
set search_path = ''
as $$
begin
  return query
  select a.alias, a.flow_slug, d.versions, d.declared_at,
         case when d.alias is null then 'undeclared'
              when a.flow_slug = d.versions[cardinality(d.versions)] then 'current'
              else 'pending' end,
         case when d.alias is null or a.flow_slug = d.versions[cardinality(d.versions)] then null
              when a.activated_at >= d.declared_at then format(
                'activated on %s by %s after the declaration: it stays until the next '
                'declaration, or select switchyard.activate_alias(%L, %L)', a.flow_slug,
                (select x.source from switchyard.alias_activations x
                  where x.alias = a.alias order by x.activation_id desc limit 1),
                a.alias, d.versions[cardinality(d.versions)])
              else coalesce(
                switchyard._alias_move_blocker(a.flow_slug, d.versions),
                format('nothing holds it back any more: the first worker whose registry has %s '
                       'moves it, or select switchyard.activate_alias(%L, %L)',
                       d.versions[cardinality(d.versions)], a.alias,
                       d.versions[cardinality(d.versions)]))
         end
    from switchyard.aliases a
    left join switchyard.alias_declarations d on d.alias = a.alias
   order by a.alias;
end
$$;
