"""A validator for the XML Schema subset junit.xsd uses, on xml.etree only (no lxml needed).

Supported: global `xs:element` declarations (with `type` or an inline `xs:complexType`), `ref`,
`xs:sequence` / `xs:choice` with `minOccurs` / `maxOccurs`, `mixed` content and `xs:attribute`
with `use` and the simple types below. Any other schema construct raises, so the checker can
never accept a document by not understanding its schema.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

XS = "{http://www.w3.org/2001/XMLSchema}"
SIMPLE_TYPES = {
    "xs:string": re.compile(r".*", re.DOTALL),
    "xs:decimal": re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)"),
    "xs:nonNegativeInteger": re.compile(r"\+?\d+"),
    "xs:dateTime": re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?"),
}
PARTICLES = (XS + "sequence", XS + "choice", XS + "element")


class Schema:
    def __init__(self, path: Path) -> None:
        root = ET.parse(path).getroot()
        self.elements = {e.get("name"): e for e in root.findall(XS + "element")}

    def validate(self, document: ET.Element) -> list[str]:
        errors: list[str] = []
        declaration = self.elements.get(document.tag)
        if declaration is None:
            return [f"root element <{document.tag}> is not declared"]
        self._element(declaration, document, document.tag, errors)
        return errors

    def _element(
        self, declaration: ET.Element, node: ET.Element, path: str, errors: list[str]
    ) -> None:
        simple = declaration.get("type")
        if simple is not None:
            if simple not in SIMPLE_TYPES:
                raise NotImplementedError(f"type {simple}")
            if len(node) or node.attrib:
                errors.append(f"{path}: simple element must have no children or attributes")
            return
        complex_type = declaration.find(XS + "complexType")
        if complex_type is None:
            raise NotImplementedError(f"element {declaration.get('name')} without a type")
        for child in complex_type:
            if child.tag not in (*PARTICLES, XS + "attribute"):
                raise NotImplementedError(child.tag)
        self._attributes(complex_type, node, path, errors)
        particle = next((c for c in complex_type if c.tag in PARTICLES), None)
        children = list(node)
        if particle is None:
            position = 0
        else:
            matched = self._occurs(particle, children, 0, path, errors)
            position = 0 if matched is None else matched
            if matched is None:
                errors.append(f"{path}: content does not match the schema")
        if position < len(children):
            errors.append(f"{path}: unexpected element <{children[position].tag}>")
        if complex_type.get("mixed") != "true":
            texts = [node.text, *(child.tail for child in children)]
            if any(text and text.strip() for text in texts):
                errors.append(f"{path}: text is not allowed here")

    def _attributes(
        self, complex_type: ET.Element, node: ET.Element, path: str, errors: list[str]
    ) -> None:
        declared = {a.get("name"): a for a in complex_type.findall(XS + "attribute")}
        for name, attribute in declared.items():
            value = node.get(str(name))
            if value is None:
                if attribute.get("use") == "required":
                    errors.append(f"{path}: missing required attribute {name}")
                continue
            kind = attribute.get("type", "xs:string")
            if kind not in SIMPLE_TYPES:
                raise NotImplementedError(f"type {kind}")
            if not SIMPLE_TYPES[kind].fullmatch(value):
                errors.append(f"{path}: attribute {name}={value!r} is not a valid {kind}")
        for name in node.attrib:
            if name not in declared:
                errors.append(f"{path}: attribute {name} is not allowed")

    def _occurs(
        self,
        particle: ET.Element,
        children: list[ET.Element],
        position: int,
        path: str,
        errors: list[str],
    ) -> int | None:
        """Match the particle min..max times from `position`; the new position or None."""
        low = int(particle.get("minOccurs", "1"))
        high_text = particle.get("maxOccurs", "1")
        high = len(children) + 1 if high_text == "unbounded" else int(high_text)
        count = 0
        while count < high:
            after = self._once(particle, children, position, path, errors)
            if after is None or after == position:
                break
            position, count = after, count + 1
        return position if count >= low else None

    def _once(
        self,
        particle: ET.Element,
        children: list[ET.Element],
        position: int,
        path: str,
        errors: list[str],
    ) -> int | None:
        if particle.tag == XS + "element":
            name = particle.get("ref") or particle.get("name")
            if position >= len(children) or children[position].tag != name:
                return None
            child = children[position]
            declaration = self.elements[name] if particle.get("ref") else particle
            self._element(declaration, child, f"{path}/{name}[{position}]", errors)
            return position + 1
        items = [c for c in particle if c.tag in PARTICLES]
        if particle.tag == XS + "sequence":
            for item in items:
                matched = self._occurs(item, children, position, path, errors)
                if matched is None:
                    return None
                position = matched
            return position
        if particle.tag == XS + "choice":
            for item in items:
                matched = self._occurs(item, children, position, path, errors)
                if matched is not None and matched > position:
                    return matched
            return None
        raise NotImplementedError(particle.tag)


def validate_file(schema_path: Path, document_path: Path) -> list[str]:
    return Schema(schema_path).validate(ET.parse(document_path).getroot())
