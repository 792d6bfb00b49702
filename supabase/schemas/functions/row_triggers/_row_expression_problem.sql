-- What is wrong with an expression a row trigger declares (docs/design/ingestion.md), or null:
-- it must be one SQL expression over the columns of `qualified` (as the generated function
-- reads them, with an empty search_path), and of type `want_type` when one is given. It is
-- typed, never run: pg_typeof of the expression over no row of the table.
create or replace function switchyard._row_expression_problem(
  qualified text, expression text, want_type text
)
returns text
language plpgsql
volatile
set search_path = ''
as $$
declare
  found_type text;
begin
  if expression ~ '^\s*$' then
    return 'it is empty: give an SQL expression over the row''s columns';
  end if;
  if position(';' in expression) > 0 then
    return 'it holds a ";": give one SQL expression, not statements';
  end if;
  if position('$sy_row_trigger$' in expression) > 0 then
    return 'it holds the quote $sy_row_trigger$, which the generated function uses';
  end if;
  begin
    execute format(E'select pg_catalog.pg_typeof(s.v)::text from (select (\n%s\n) as v from %s as t '
                   'limit 0) as s right join (select 1) as one on true', expression, qualified)
       into found_type;
  exception when others then
    return sqlerrm || ' (expressions see the row''s columns and an empty search_path: qualify '
      'anything outside pg_catalog)';
  end;
  if want_type is not null and found_type is distinct from want_type then
    return format('it is of type %s, not %s', found_type, want_type);
  end if;
  return null;
end
$$;
