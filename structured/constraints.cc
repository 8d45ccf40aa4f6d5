#include "structured/constraints.h"

#include <algorithm>
#include <utility>

namespace devmgr::structured {
namespace {

// A typed set of attribute values.
struct ValueSet {
  Attribute::Type type;
  std::set<std::string> values;

  bool Intersects(const ValueSet& other) const {
    if (type != other.type) return false;
    for (const std::string& value : values) {
      if (other.values.count(value) > 0) return true;
    }
    return false;
  }
  ValueSet Intersection(const ValueSet& other) const {
    ValueSet out{type, {}};
    for (const std::string& value : values) {
      if (other.values.count(value) > 0) out.values.insert(value);
    }
    return out;
  }
};

ValueSet AsSet(const Attribute& attribute) {
  return ValueSet{attribute.type, {attribute.values.begin(), attribute.values.end()}};
}

// Whether the attribute has a value to compare with list-type attributes: upstream's
// attributeAsSet gives none for an unknown type or an empty list.
bool HasValues(const Attribute& attribute) {
  return attribute.type != Attribute::Type::kUnknown && !attribute.values.empty();
}

// What both constraints share: the requests they apply to, the attribute, and the devices
// counted in (by id, newest last).
class AttributeConstraint : public Constraint {
 public:
  AttributeConstraint(std::vector<std::string> requests, std::string attribute, bool list_types)
      : requests_(requests.begin(), requests.end()),
        attribute_(std::move(attribute)),
        list_types_(list_types) {}

 protected:
  bool Applies(const std::string& request, const std::string& subrequest) const {
    if (requests_.empty()) return true;
    if (requests_.count(request) > 0) return true;
    return !subrequest.empty() && requests_.count(request + "/" + subrequest) > 0;
  }

  const std::set<std::string> requests_;
  const std::string attribute_;
  const bool list_types_;
};

class MatchAttribute final : public AttributeConstraint {
 public:
  using AttributeConstraint::AttributeConstraint;

  bool Add(const std::string& request, const std::string& subrequest, const DeviceInfo& device,
           const DeviceID& id) override {
    if (!Applies(request, subrequest)) return true;
    const Attribute* attribute = LookupAttribute(device, id.driver, attribute_);
    if (attribute == nullptr) return false;
    if (list_types_) {
      if (!HasValues(*attribute)) return false;
      ValueSet own = AsSet(*attribute);
      ValueSet common = own;
      if (!entries_.empty()) {
        if (!entries_.back().common.Intersects(own)) return false;
        common = entries_.back().common.Intersection(own);
      }
      entries_.push_back({id, attribute, std::move(own), std::move(common)});
      return true;
    }
    if (!entries_.empty()) {
      // Scalars only; the first device's value decides.
      const Attribute& first = *entries_.front().attribute;
      if (attribute->is_list || attribute->type == Attribute::Type::kUnknown || first.is_list ||
          attribute->type != first.type || attribute->values != first.values) {
        return false;
      }
    }
    entries_.push_back({id, attribute, {}, {}});
    return true;
  }

  void Remove(const std::string& request, const std::string& subrequest, const DeviceInfo&,
              const DeviceID& id) override {
    if (!Applies(request, subrequest)) return;
    for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
      if (it->id == id) {
        entries_.erase(std::next(it).base());
        break;
      }
    }
    // What the devices still in share, recomputed from their own values.
    if (!entries_.empty()) entries_.front().common = entries_.front().own;
    for (size_t i = 1; i < entries_.size(); ++i) {
      entries_[i].common = entries_[i - 1].common.Intersection(entries_[i].own);
    }
  }

  std::string Describe() const override { return "matchAttribute " + attribute_; }

 private:
  struct Entry {
    DeviceID id;
    const Attribute* attribute;
    ValueSet own;     // list types: the device's values
    ValueSet common;  // list types: the values every device up to this one has
  };

  std::vector<Entry> entries_;
};

class DistinctAttribute final : public AttributeConstraint {
 public:
  using AttributeConstraint::AttributeConstraint;

  bool Add(const std::string& request, const std::string& subrequest, const DeviceInfo& device,
           const DeviceID& id) override {
    if (!Applies(request, subrequest)) return true;
    const Attribute* attribute = LookupAttribute(device, id.driver, attribute_);
    if (attribute == nullptr) return false;
    for (const Entry& entry : entries_) {
      if (Conflicts(*attribute, *entry.attribute)) return false;
    }
    entries_.push_back({id, attribute});
    return true;
  }

  void Remove(const std::string& request, const std::string& subrequest, const DeviceInfo&,
              const DeviceID& id) override {
    if (!Applies(request, subrequest)) return;
    for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
      if (it->id == id) {
        entries_.erase(std::next(it).base());
        return;
      }
    }
  }

  std::string Describe() const override { return "distinctAttribute " + attribute_; }

 private:
  struct Entry {
    DeviceID id;
    const Attribute* attribute;
  };

  // A value the comparison cannot use (a list without list types, an empty list, an unknown
  // attribute) conflicts with everything present, and nothing conflicts with it.
  bool Conflicts(const Attribute& added, const Attribute& present) const {
    if (!HasValues(added) || (!list_types_ && added.is_list)) return true;
    if (present.type == Attribute::Type::kUnknown || (!list_types_ && present.is_list)) {
      return false;
    }
    return AsSet(added).Intersects(AsSet(present));
  }

  std::vector<Entry> entries_;
};

}  // namespace

std::unique_ptr<Constraint> MakeMatchAttribute(std::vector<std::string> requests,
                                               std::string attribute, bool list_types) {
  return std::make_unique<MatchAttribute>(std::move(requests), std::move(attribute), list_types);
}

std::unique_ptr<Constraint> MakeDistinctAttribute(std::vector<std::string> requests,
                                                  std::string attribute, bool list_types) {
  return std::make_unique<DistinctAttribute>(std::move(requests), std::move(attribute), list_types);
}

}  // namespace devmgr::structured
