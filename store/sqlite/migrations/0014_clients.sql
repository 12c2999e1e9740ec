-- clients holds each push client (DESIGN.md section 8b): the principal
-- that owns it and the last ordinal admitted, written in the same
-- transaction as the commits it admits. updated_at is UTC unix
-- microseconds.
CREATE TABLE clients (
    space        TEXT    NOT NULL,
    id           TEXT    NOT NULL,
    owner        TEXT    NOT NULL,
    last_ordinal INTEGER NOT NULL,
    last_seq     INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    PRIMARY KEY (space, id)
) WITHOUT ROWID;

CREATE INDEX clients_updated ON clients (updated_at);
CREATE INDEX clients_owner ON clients (space, owner);
