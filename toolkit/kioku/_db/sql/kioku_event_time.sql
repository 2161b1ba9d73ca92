CREATE OR REPLACE FUNCTION kioku_event_time(attributes jsonb) RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN (attributes ->> 'event_time')::timestamptz
