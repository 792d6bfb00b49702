-- Why a keep-alive base URL is refused, or null (docs/design/versions.md, keep-alive). The host
-- must be one of functions_hosts (a setting: host names separated by commas); without it, a
-- Supabase project's own host (<ref>.supabase.co, https) or a local one (localhost, 127.x.x.x,
-- [::1], kong, host.docker.internal), so a wake with the service key goes nowhere else. It
-- reads that setting, so it is stable.
create or replace function switchyard.base_url_problem(url text)
returns text
language plpgsql
stable
set search_path = ''
as $$
declare
  parts text[];
  host text;
  allowed text;
  local_host boolean;
begin
  if url is null then
    return 'it is missing';
  elsif char_length(url) > 2048 then
    return format('it is %s characters long; the limit is 2048', char_length(url));
  elsif url ~ '[[:space:][:cntrl:]]' then
    return 'it contains whitespace or a control character';
  elsif position('@' in url) > 0 then
    return 'it contains "@" (a user name or password, or a host in disguise)';
  end if;
  parts := regexp_match(url,
    '^(https?)://([A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])(:([0-9]{1,5}))?(/[A-Za-z0-9._~%/-]*)?$');
  if parts is null then
    return 'use https://host[:port][/path] (letters, digits, ".", "-" in the host; no query or fragment)';
  end if;
  if coalesce(parts[5]::int, 0) > 65535 then
    return format('port %s is out of range', parts[5]);
  end if;
  host := lower(parts[2]);
  -- A name without a dot resolves only on the local network (a Docker network's service
  -- names). It must start with a letter: a number without dots (2130706433, 0x7f000001) is an
  -- IPv4 address to many resolvers, and could be any host.
  if parts[1] = 'http'
     and not (host = 'localhost' or host = '[::1]' or host ~ '^127(\.[0-9]{1,3}){3}$'
              or host = 'host.docker.internal' or host ~ '^[a-z]([a-z0-9-]*[a-z0-9])?$') then
    return 'plain http:// is allowed only for a loopback or local network host (localhost, '
      '127.0.0.1, [::1], host.docker.internal, a name without a dot such as kong): use https://';
  end if;
  -- The bearer goes to this host: only hosts the operator lists, by default the project's own.
  select s.value into allowed from switchyard.settings s where s.name = 'functions_hosts';
  local_host := host = 'localhost' or host = '[::1]' or host ~ '^127(\.[0-9]{1,3}){3}$'
                or host = 'host.docker.internal' or host = 'kong';
  if allowed is null then
    if not (local_host or (parts[1] = 'https' and host ~ '^[a-z0-9]([a-z0-9-]*[a-z0-9])?\.supabase\.co$')) then
      return format('host %s is not the project''s own functions host (<project-ref>.supabase.co) '
        'or a local one (localhost, 127.0.0.1, [::1], kong, host.docker.internal): list it first '
        'with select switchyard.set_setting(''functions_hosts'', ''%s'')', host, host);
    end if;
  elsif not (host = any (select lower(btrim(h, ' ')) from unnest(string_to_array(allowed, ',')) h)) then
    return format('host %s is not in functions_hosts (%s): add it with '
      'select switchyard.set_setting(''functions_hosts'', ''<hosts, comma-separated>'')',
      host, left(allowed, 200));
  end if;
  return null;
end
$$;
