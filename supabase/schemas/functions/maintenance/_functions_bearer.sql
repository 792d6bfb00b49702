-- The bearer a wake request carries: the Vault secret 'switchyard_functions_bearer'
-- when Vault is installed and holds it, else the functions_bearer setting.
create or replace function switchyard._functions_bearer()
returns text
language plpgsql
stable
set search_path = ''
as $$
declare
  secret text;
begin
  if to_regclass('vault.decrypted_secrets') is not null then
    execute 'select decrypted_secret from vault.decrypted_secrets where name = $1 limit 1'
      into secret using 'switchyard_functions_bearer';
  end if;
  return coalesce(secret, (select s.value from switchyard.settings s where s.name = 'functions_bearer'));
end
$$;
