-- Why a functions_hosts value is refused, or null: host names separated by commas (spaces
-- around them allowed), each letters, digits, "." and "-" (or a bracketed IPv6 address), no
-- scheme, port, path or wildcard; at most 50 of them.
create or replace function switchyard._hosts_problem(hosts text)
returns text
language plpgsql
immutable
set search_path = ''
as $$
declare
  host text;
  n int := 0;
begin
  if char_length(hosts) > 4096 then
    return format('it is %s characters long; the limit is 4096', char_length(hosts));
  end if;
  foreach host in array string_to_array(hosts, ',') loop
    host := btrim(host, ' ');
    n := n + 1;
    if host !~ '^([A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])$' then
      return format('host %s is invalid: list host names (letters, digits, ".", "-") separated '
                    'by commas, without scheme, port, path or wildcard', switchyard._clip(host));
    end if;
  end loop;
  if n = 0 then
    return 'list at least one host name (null restores the default)';
  elsif n > 50 then
    return format('it lists %s hosts; the limit is 50', n);
  end if;
  return null;
end
$$;
