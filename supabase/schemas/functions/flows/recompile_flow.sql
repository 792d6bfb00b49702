-- Local development only (docs/design/worker.md#compiling-at-deploy-and-in-local-development):
-- compiles a flow like ensure_flow, but a
-- changed shape, which ensure_flow refuses with SY004, replaces the compiled flow instead: its
-- runs, tasks and private queues are deleted (delete_flow) and the new shape is compiled, the
-- flow keeping its alias membership and, when it was one, its place as the alias's target.
-- Returns ensure_flow's answer, or 'recompiled'. A worker calls it only where it is sure of a
-- local database and not the hosted runtime; deployed code never does.
create or replace function switchyard.recompile_flow(shape jsonb)
returns text
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  slug text;
  target_of text;
  member_of text;
begin
  begin
    return switchyard.ensure_flow(shape);
  exception when sqlstate 'SY004' then
    null; -- a changed shape: replaced below
  end;
  slug := shape ->> 'slug';
  perform pg_advisory_xact_lock(hashtextextended('switchyard.flow:' || lower(slug), 0));
  select a.alias into target_of from switchyard.aliases a where a.flow_slug = slug;
  select m.alias into member_of from switchyard.alias_members m where m.flow_slug = slug;
  -- delete_flow keeps an alias's target; the alias points at the new shape again below.
  delete from switchyard.aliases a where a.alias = target_of;
  perform switchyard.delete_flow(slug);
  perform switchyard.ensure_flow(shape);
  if member_of is not null then
    insert into switchyard.alias_members (alias, flow_slug) values (member_of, slug);
  end if;
  if target_of is not null then
    insert into switchyard.aliases (alias, flow_slug) values (target_of, slug);
  end if;
  return 'recompiled';
end
$$;
