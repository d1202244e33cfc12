# Tries a host outside its allowedHosts and prints the denial: the host
# refuses it before any connection (host_not_allowed), and the refusal is
# in the denial log with this agent's id.
try:
    await restricted_api.fetch("https://example.org/")
    restricted_api.log("fetched example.org: this should not happen")
except RestrictedAPIError as e:
    restricted_api.log("denied:", e.code, str(e))
