# Counts the words of the page it runs on (page.read), and names the
# page's first heading. Every call goes to the host, which decides it.
text = await restricted_api.getPageText()
words = len(text.split())
heading = await restricted_api.querySelector("h1")
restricted_api.log(f"{words} words")
if heading.get("found", True) and heading.get("text"):
    restricted_api.log("heading:", heading["text"])
