-- Aliases are unique case-insensitively (docs/design/overview.md#identity-rules): refuses a name
-- that only
-- differs in case from an existing alias (or alias membership), naming both spellings, so
-- sync_alias and activate_alias answer with the rule instead of a raw unique-key error.
create or replace function switchyard._assert_alias_case(alias_name text)
returns void
language plpgsql
stable
set search_path = ''
as $$
declare
  existing text;
begin
  select a.alias into existing from switchyard.aliases a
   where lower(a.alias) = lower(alias_name) and a.alias <> alias_name
   limit 1;
  if existing is null then
    select m.alias into existing from switchyard.alias_members m
     where lower(m.alias) = lower(alias_name) and m.alias <> alias_name
     limit 1;
  end if;
  if existing is not null then
    perform switchyard._refuse('23505', 'alias_case_collision', 'alias_name', alias_name, format(
      'alias %s collides with alias %s: aliases are unique case-insensitively; use %s',
      to_json(alias_name)::text, to_json(existing)::text, to_json(existing)::text),
      context => jsonb_build_object('existing_alias', existing));
  end if;
end
$$;
