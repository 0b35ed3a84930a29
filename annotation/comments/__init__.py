"""Discussion on items: comments by a project's members and curators, with @mentions that
notify (in-app, and by e-mail where the mentioned member has an address and e-mail is
configured). In a blind project an annotator reads and writes an item's comments only once the
item is revealed to them (``annotation.blind.item_revealed``: their label committed and the
reveal policy allowing it)."""
