package store

// schemaSessions adds per-session settings (docs/viewer.md). settings holds the
// normalised SessionSettings as JSON, so a later field needs no migration.
const schemaSessions = `
CREATE TABLE session_settings (
	session_id TEXT PRIMARY KEY,
	settings   TEXT NOT NULL,               -- SessionSettings, JSON
	created_at INTEGER NOT NULL,            -- ms since the epoch
	updated_at INTEGER NOT NULL             -- ms since the epoch
) WITHOUT ROWID;
`

// camelSessionSettings renames the stored settings' members to the names
// every wire uses (permissionLevel, workspace.rootDir), so the stored JSON
// and the replies built from it say the same thing. A row written before
// holds exactly the two old members; anything else is left as it is and
// refused when read, never guessed at.
const camelSessionSettings = `
UPDATE session_settings SET settings = json_object(
	'permissionLevel', json_extract(settings, '$.permission_level'),
	'workspace', json_object(
		'mode', json_extract(settings, '$.workspace.mode'),
		'rootDir', json_extract(settings, '$.workspace.root_dir')))
WHERE json_valid(settings) AND json_type(settings, '$.permission_level') = 'text';
`
