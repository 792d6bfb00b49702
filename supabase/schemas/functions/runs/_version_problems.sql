-- What keeps a run's steps from going onto another concrete version
-- (docs/design/rerun.md), one readable line each, empty when the proof holds: every step whose
-- state is kept
-- (`kept`: its output copied by a fork, or completed, skipped or started in a moved run) exists
-- in `target` with the same slug, the same kind and the same dependencies, and every step named
-- in `must_run` exists there. Steps of `target` not in `source` simply run. Read from the
-- compiled shapes only, so the proof is the SQL core's, never a caller's.
create or replace function switchyard._version_problems(
  source text, target text, kept text[], must_run text[]
)
returns text[]
language sql
stable
set search_path = ''
as $$
  select coalesce(array_agg(p.problem order by p.ord, p.problem), '{}') from (
    select 1 as ord, format('step %s is kept but %s has no step %s', to_json(k.slug)::text,
                            to_json(target)::text, to_json(k.slug)::text) as problem
      from unnest(kept) k(slug)
     where not exists (select 1 from switchyard.steps t
                        where t.flow_slug = target and t.step_slug = k.slug)
    union all
    select 2, format('step %s is a %s step in %s but a %s step in %s', to_json(s.step_slug)::text,
                     s.step_type, to_json(source)::text, t.step_type, to_json(target)::text)
      from unnest(kept) k(slug)
      join switchyard.steps s on s.flow_slug = source and s.step_slug = k.slug
      join switchyard.steps t on t.flow_slug = target and t.step_slug = k.slug
     where s.step_type <> t.step_type
    union all
    select 3, format('step %s depends on [%s] in %s but on [%s] in %s', to_json(k.slug)::text,
                     array_to_string(sd.deps, ', '), to_json(source)::text,
                     array_to_string(td.deps, ', '), to_json(target)::text)
      from unnest(kept) k(slug)
      join switchyard.steps t on t.flow_slug = target and t.step_slug = k.slug
      cross join lateral (select coalesce(array_agg(d.dep_slug order by d.dep_slug), '{}') as deps
                            from switchyard.deps d
                           where d.flow_slug = source and d.step_slug = k.slug) sd
      cross join lateral (select coalesce(array_agg(d.dep_slug order by d.dep_slug), '{}') as deps
                            from switchyard.deps d
                           where d.flow_slug = target and d.step_slug = k.slug) td
     where sd.deps <> td.deps
    union all
    select 4, format('step %s must run but %s has no step %s', to_json(m.slug)::text,
                     to_json(target)::text, to_json(m.slug)::text)
      from unnest(must_run) m(slug)
     where not exists (select 1 from switchyard.steps t
                        where t.flow_slug = target and t.step_slug = m.slug)
  ) p
$$;
