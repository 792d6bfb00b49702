-- Refuses a flow, step or alias slug that breaks the slug rule
-- (docs/design/overview.md#identity-rules):
-- letters, digits and single underscores, starting with a letter; `run` is reserved for steps.
-- The value it echoes is clipped.
create or replace function switchyard.assert_slug(kind text, slug text)
returns text
language plpgsql
immutable
set search_path = ''
as $$
begin
  if slug is null or slug !~ '^[A-Za-z][A-Za-z0-9]*(_[A-Za-z0-9]+)*$' or length(slug) > 47 then
    perform switchyard._refuse('22023', 'slug_format',
      case kind when 'alias' then 'alias_name' else kind || '_slug' end, slug, format(
      '%s slug %s is invalid: start with a letter, then letters, digits and single underscores '
      '(at most 47 characters)', kind, switchyard._clip(slug)),
      context => jsonb_build_object('kind', kind));
  end if;
  if kind = 'step' and lower(slug) = 'run' then
    perform switchyard._refuse('22023', 'step_slug_reserved', 'step_slug', slug, format(
      'step slug %s is invalid: "run" is reserved', switchyard._clip(slug)));
  end if;
  return slug;
end
$$;
