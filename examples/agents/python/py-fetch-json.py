# Fetches JSON from its input URL (default: a host in its allowedHosts)
# and prints the top-level keys. The host checks the URL against
# allowedHosts, and every redirect hop again.
url = agent_input.strip() or "https://jsonplaceholder.typicode.com/todos/1"
try:
    r = await restricted_api.fetch(url)
    data = r.json()
    keys = sorted(data) if isinstance(data, dict) else f"a list of {len(data)}"
    restricted_api.log(f"{r.status} {r.url}: {keys}")
except RestrictedAPIError as e:
    restricted_api.log("denied:", e.code, str(e))
