-- The keep-alive's base URL (docs/ARCHITECTURE.md §6) may use plain http:// for the hosts a
-- local Supabase stack reaches its functions by from inside the database container: a
-- single-label name on the stack's private network (kong, supabase_kong_<project>) and
-- host.docker.internal, as well as a loopback host. base_url_problem (from 20261202000300) is
-- redefined whole with that rule; everything else about the URL is unchanged.

-- Why a base URL for the keep-alive's requests is refused, or null when it is fine: https://
-- only (plain http:// for a loopback host, a single-label name or host.docker.internal), a
-- host and an optional port and path, nothing else: no user name or password ("@"),
-- whitespace, control characters, query or fragment. The bearer goes to this host, so nothing
-- in it may point elsewhere.
create or replace function switchyard.base_url_problem(url text)
returns text
language plpgsql
immutable
set search_path = ''
as $$
declare
  parts text[];
  host text;
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
  return null;
end
$$;
