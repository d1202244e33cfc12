# Fetches JSON from its input URL (default: a host in its allowedHosts)
# and prints its top-level keys, in the source design's style: no await.
# The host checks the URL against allowedHosts, and every redirect hop.
url = agent_input.strip() or "https://jsonplaceholder.typicode.com/users/1"
try:
    r = restricted_api.fetch(url)
    data = r.json()
    restricted_api.log(r.status, sorted(data) if isinstance(data, dict) else f"a list of {len(data)}")
except RestrictedAPIError as e:
    restricted_api.log("denied:", e.code)
